#pragma once
// The Backend seam: everything that touches a device goes through this interface, served
// by the CUDA runtime/driver (cuda_backend.cpp) or by the simulated device (sim_backend.cpp).
//
// Handles are opaque: a cudaStream_t / cudaEvent_t on cuda, a Sim* object on sim. Stream
// handle nullptr is the device's default (legacy) stream on both.
// Thread-safety: every method may be called from any thread. Device memory and virtual
// memory calls take the device index explicitly; stream and event calls act on the device
// the handle belongs to.

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/event.h>
#include <cudascope/cuda/ipc.h>
#include <cudascope/cuda/telemetry.h>

#include "tensor_kernel.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace cudascope::cuda::detail {

struct JitKernel;  // jiterator/jit_kernel.h

using StreamHandle = void*;
using EventHandle = void*;

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost, kDefault };

// cudaStreamCaptureMode and cudaStreamCaptureStatus, same values.
enum class CaptureMode { kGlobal = 0, kThreadLocal = 1, kRelaxed = 2 };
enum class CaptureStatus { kNone = 0, kActive = 1, kInvalidated = 2 };
using GraphHandle = void*;      // cudaGraph_t on cuda
using GraphExecHandle = void*;  // cudaGraphExec_t on cuda

struct CaptureInfo {
  CaptureStatus status = CaptureStatus::kNone;
  std::uint64_t id = 0;  // unique per capture sequence while status is not kNone
};

struct EventFlags {
  bool enable_timing = false;
  bool blocking = false;
  bool interprocess = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const noexcept = 0;

  // Devices.
  // 0 when no device (never throws for that). Creates no context, so a process may still
  // fork after asking: on cuda NVML counts (CUDA_VISIBLE_DEVICES applied as torch applies it)
  // and only where NVML cannot answer does cudaGetDeviceCount initialise the driver.
  virtual int device_count() = 0;
  virtual DeviceProperties properties(int device) = 0;
  // The calling thread's current device, as the backend holds it (cudaGetDevice): code
  // outside the runtime may change it (a raw cudaSetDevice), so the runtime asks, never caches.
  virtual int current_device() = 0;
  virtual void set_device(int device) = 0;  // the calling thread's device
  virtual void synchronize_device(int device) = 0;
  virtual std::pair<std::size_t, std::size_t> mem_get_info(int device) = 0;
  virtual bool can_access_peer(int device, int peer) = 0;
  virtual void enable_peer_access(int device, int peer) = 0;

  // Device memory. malloc returns nullptr when the device is out of memory (the caller
  // decides whether to free caches and retry); other failures throw.
  virtual void* malloc(int device, std::size_t size) = 0;
  virtual void free(int device, void* ptr) = 0;
  virtual void* malloc_host_pinned(std::size_t size) = 0;
  virtual void free_host_pinned(void* ptr) = 0;
  // Page-locks ordinary host memory [ptr, ptr+size) so copies from and to it are asynchronous
  // (cudaHostRegister), and undoes it (cudaHostUnregister; ptr as registered).
  virtual void host_register(void* ptr, std::size_t size) = 0;
  virtual void host_unregister(void* ptr) = 0;
  // Stream-ordered allocation (cudaMallocAsync / cudaFreeAsync) from the memory pool of
  // `device`, which must be the calling thread's current device: cudaMallocAsync takes the
  // current device's pool. malloc_async returns nullptr when the device is out of memory.
  virtual void* malloc_async(int device, std::size_t size, StreamHandle stream) = 0;
  virtual void free_async(int device, void* ptr, StreamHandle stream) = 0;

  // Virtual memory, for expandable segments. map/unmap work in multiples of granularity().
  virtual std::size_t vm_granularity(int device) = 0;
  virtual void* vm_reserve(int device, std::size_t size) = 0;
  virtual void vm_release(int device, void* base, std::size_t size) = 0;
  // Backs [ptr, ptr+size) with physical memory; false when the device is out of memory.
  virtual bool vm_map(int device, void* ptr, std::size_t size) = 0;
  virtual void vm_unmap(int device, void* ptr, std::size_t size) = 0;

  // Streams.
  virtual StreamHandle stream_create(int device, int priority) = 0;
  virtual void stream_destroy(int device, StreamHandle stream) = 0;
  virtual bool stream_query(int device, StreamHandle stream) = 0;
  virtual void stream_synchronize(int device, StreamHandle stream) = 0;
  virtual void stream_wait_event(int device, StreamHandle stream, EventHandle event) = 0;
  virtual std::pair<int, int> stream_priority_range() = 0;
  virtual std::int64_t stream_id(int device, StreamHandle stream) = 0;

  // Events.
  virtual EventHandle event_create(int device, EventFlags flags) = 0;
  virtual void event_destroy(int device, EventHandle event) = 0;
  virtual void event_record(int device, EventHandle event, StreamHandle stream) = 0;
  virtual bool event_query(int device, EventHandle event) = 0;
  virtual void event_synchronize(int device, EventHandle event) = 0;
  virtual float event_elapsed_ms(EventHandle start, EventHandle end) = 0;
  virtual IpcEventHandle event_ipc_handle(int device, EventHandle event) = 0;
  virtual EventHandle event_open_ipc(int device, const IpcEventHandle& handle) = 0;

  // CUDA IPC memory (ipc.h). ipc_get_mem_handle: a handle for the allocation that malloc
  // returned at `base`. ipc_open_mem_handle: maps another process's allocation on `device`
  // and returns its base in this process (a process cannot open its own handles, as in
  // CUDA); ipc_close_mem_handle unmaps it.
  virtual IpcMemHandle ipc_get_mem_handle(int device, void* base) = 0;
  virtual void* ipc_open_mem_handle(int device, const IpcMemHandle& handle) = 0;
  virtual void ipc_close_mem_handle(int device, void* ptr) = 0;

  // Copies and fills, ordered on `stream`.
  virtual void memcpy_async(int device, void* dst, const void* src, std::size_t bytes, CopyKind kind,
                            StreamHandle stream) = 0;
  virtual void memset_async(int device, void* dst, int value, std::size_t bytes, StreamHandle stream) = 0;

  // CUDA graphs (graphs.h): stream capture, instantiation and launch. While a stream captures,
  // the work queued on it (kernels, copies, fills, event waits) is recorded into the graph
  // instead of running. Capture-unsafe calls raise cuda::Error with CUDA's codes
  // (cudaErrorStreamCaptureUnsupported, ...Implicit, ...Invalidated). end_capture returns the
  // graph; it throws when the capture was invalidated (the capture is over either way).
  virtual void stream_begin_capture(int device, StreamHandle stream, CaptureMode mode) = 0;
  virtual GraphHandle stream_end_capture(int device, StreamHandle stream) = 0;
  virtual CaptureInfo stream_capture_info(int device, StreamHandle stream) = 0;
  // cudaThreadExchangeStreamCaptureMode: the calling thread's mode for capture-unsafe calls.
  virtual CaptureMode exchange_thread_capture_mode(CaptureMode mode) = 0;
  virtual GraphExecHandle graph_instantiate(int device, GraphHandle graph) = 0;
  virtual void graph_launch(int device, GraphExecHandle exec, StreamHandle stream) = 0;
  virtual void graph_destroy(int device, GraphHandle graph) = 0;
  virtual void graph_exec_destroy(int device, GraphExecHandle exec) = 0;
  // cudaGraphDebugDotPrint (verbose) to `path`.
  virtual void graph_debug_dot_print(GraphHandle graph, const std::string& path) = 0;
  virtual std::size_t graph_node_count(GraphHandle graph) = 0;

  // Health figures (NVML on cuda; the simulated device's model on sim).
  virtual DeviceTelemetry telemetry(int device) = 0;

  // The runtime's own kernels. spin: occupies `stream` for about `nanoseconds` (tests and
  // demos use it as a kernel of known length).
  virtual void launch_spin(int device, StreamHandle stream, std::uint64_t nanoseconds) = 0;
  // A tensor kernel (tensor_kernel.h) on `stream`, over memory of `device` (and host memory
  // the device can address).
  virtual void launch_tensor_kernel(int device, StreamHandle stream, const TensorKernel& kernel) = 0;
  // A jiterator kernel (jiterator.h) on `stream` of `device`: compiled on the calling thread
  // the first time its variant is launched (NVRTC on cuda, the host compiler on sim), then
  // queued like the runtime's own kernels. Throws cuda::Error when compiling fails.
  virtual void launch_jit_kernel(int device, StreamHandle stream, const JitKernel& kernel) = 0;
};

// The process's backend, chosen once from CUDASCOPE_BACKEND (cuda|sim|auto, default cuda).
// Throws cuda::Error naming the valid backends when the value is unknown.
Backend& backend();

std::unique_ptr<Backend> make_sim_backend();
// nullptr when this build has no cuda backend.
std::unique_ptr<Backend> make_cuda_backend();
// True when the cuda backend would find a device (used by auto selection).
bool cuda_backend_has_device();

}  // namespace cudascope::cuda::detail
