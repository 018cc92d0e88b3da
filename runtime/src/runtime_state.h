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
// The calling thread's current device (cached; the backend is told on change).
int thread_device();
void set_thread_device(int device);
// The calling thread's current stream on `device` (an index resolve_device returned): what
// current_stream(device) holds, without resolving the device again or building a Stream
// (the allocator reads it on every malloc).
struct CurrentStreamOf {
  StreamHandle handle;
  std::int64_t id;
};
CurrentStreamOf current_stream_of(int device);

}  // namespace cudascope::cuda::detail
