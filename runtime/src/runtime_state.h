#pragma once
// Process-wide runtime state shared by the runtime's translation units: lazy
// initialisation, fork detection, the sync-debug mode and CUDA_LAUNCH_BLOCKING.

#include "backend/backend.h"

namespace cudascope::cuda::detail {

// Initialises the backend on first use and returns it; throws in a child forked after
// initialisation, and when no device is available.
Backend& lazy_backend();
// Checks a device index (-1: the current device) and returns the resolved index.
int resolve_device(int device);
// Called by every synchronizing call the runtime makes, with its name: warns or throws
// according to the sync-debug mode.
void on_synchronizing_call(const char* call);
// CUDA_LAUNCH_BLOCKING=1: launches and copies synchronise their stream.
bool launch_blocking();
// The calling thread's current device, asked of the backend each time (cudaGetDevice), as
// torch's c10::cuda::current_device() does: code outside the runtime (a raw cudaSetDevice,
// a library's own guard) may change it. Call only once the backend is initialised.
int thread_device();
// Makes `device` (a checked index) current; no backend call when it already is.
void set_thread_device(int device);
// The backend's driver was initialised without the runtime (cudaGetDeviceCount where NVML
// could not count): a child forked from now on cannot use CUDA, as after init().
void note_driver_initialized();
// The devices CUDA_VISIBLE_DEVICES (`visible`, nullptr when unset) leaves of `raw_count`, as
// torch's _device_count_nvml reads it: ordinals up to the first negative or unparsable one,
// cut at the first ordinal >= raw_count, none when one repeats; -1 for a list of UUIDs or
// MIG instances (the caller asks the driver instead).
int visible_device_count(const char* visible, int raw_count);
// The calling thread's current stream on `device` (an index resolve_device returned): what
// current_stream(device) holds, without resolving the device again or building a Stream
// (the allocator reads it on every malloc).
struct CurrentStreamOf {
  StreamHandle handle;
  std::int64_t id;
};
CurrentStreamOf current_stream_of(int device);

}  // namespace cudascope::cuda::detail
