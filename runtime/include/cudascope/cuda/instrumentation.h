#pragma once
// The runtime's instrumentation seam: the runtime reports what it does (allocator events,
// and on the sim backend the device activity a GPU would show CUPTI) to at most one
// Observer, which the profiler installs. With no observer installed a report costs one
// relaxed atomic load and a branch.
//
// Thread-safety: set_observer may be called from any thread; an Observer's methods are
// called from whichever thread did the work (streams' worker threads on sim) and must be
// thread-safe. The observer must outlive its installation (uninstall with nullptr first).
//
// Tools attach as on a GPU: the sim backend loads CUDA_INJECTION64_PATH when it starts (a
// library exporting cudascope_sim_attach is told it runs on sim), and when CUDASCOPE_TRACE is
// set without CUDA_INJECTION64_PATH, loading the runtime points CUDA_INJECTION64_PATH and
// NVTX_INJECTION64_PATH at libcudascope_inject.so beside it (or CUDASCOPE_INJECT_LIBRARY).

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cudascope::cuda::instrumentation {

// One allocator action, as the caching allocator's history names them.
struct AllocatorEvent {
  enum class Action : std::uint8_t { kAlloc, kFree, kSegmentAlloc, kSegmentFree, kSegmentMap, kSegmentUnmap, kOom };
  Action action;
  int device;  // -1: the caching host allocator (pinned memory; its pool and active bytes below)
  std::int64_t stream_id;
  std::uintptr_t address;
  std::size_t size;
  std::uint64_t time_ns;          // host steady clock (see host_time_ns)
  std::int64_t allocated_bytes;   // the device's totals after the action
  std::int64_t reserved_bytes;
  // The CUDA graph's private pool the block or segment belongs to (graphs.h); {0, 0}: the
  // device's own pools. Set on allocations and segment allocations.
  std::uint64_t graph_pool[2] = {0, 0};
};

// Device activity the sim backend reports itself (on cuda, CUPTI reports it). Timestamps are
// host_time_ns(). Names are string literals or otherwise live for the whole process.
enum class CopyKind : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost, kPeerToPeer, kDefault };

struct KernelActivity {
  const char* name;  // demangled
  int device;
  std::int64_t stream_id;
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint32_t correlation_id;  // matches the ApiCall that launched it
  std::int32_t grid[3];
  std::int32_t block[3];
  std::int32_t registers_per_thread;
  std::int32_t static_shared_memory;
  std::int32_t dynamic_shared_memory;
};

struct CopyActivity {
  CopyKind kind;
  int device;
  int src_device;  // -1 for host memory
  int dst_device;
  std::int64_t stream_id;
  std::size_t bytes;
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint32_t correlation_id;
};

struct MemsetActivity {
  int device;
  std::int64_t stream_id;
  std::size_t bytes;
  int value;
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint32_t correlation_id;
};

// A host thread blocked on the device (cudaStreamSynchronize and friends).
struct SyncActivity {
  enum class Type : std::uint8_t { kStream, kDevice, kEvent, kStreamWaitEvent };
  Type type;
  int device;
  std::int64_t stream_id;  // -1 when not about one stream
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint32_t correlation_id;
};

// Device memory obtained from or returned to the device (cudaMalloc / cudaFree on the sim;
// on a GPU the profiler reads the same from CUPTI's memory records).
struct DeviceMemoryActivity {
  int device;
  std::uint64_t address;
  std::uint64_t bytes;
  bool release;
  std::uint64_t time_ns;
};

// A runtime API call on the calling thread (the host side of a launch or copy).
struct ApiCall {
  const char* name;  // the CUDA runtime function it stands for, e.g. "cudaLaunchKernel"
  std::uint64_t start_ns;
  std::uint64_t end_ns;
  std::uint32_t correlation_id;
};

// nvtx::mark / range_push / range_pop, on the calling thread. `message` is valid only
// during the call (nullptr for kPop).
struct NvtxEvent {
  enum class Type : std::uint8_t { kPush, kPop, kMark };
  Type type;
  const char* message;
  std::uint64_t time_ns;
};

// Event::elapsed_time(start, end): the span between the two records on the device, reported
// when elapsed_time computes it. Times are host_time_ns(): the end is placed through a
// reference event recorded on the device when timing began (float milliseconds, so its
// placement is exact to ~0.1 ms per hour the process has run), the start at the end less the
// elapsed time. `name` is the start event's name (nullptr when it has none), valid only
// during the call.
struct EventTiming {
  const char* name;
  int device;
  std::int64_t stream_id;  // the stream the start event was recorded on
  std::uint64_t start_ns;
  std::uint64_t end_ns;
};

// Methods other than on_allocator_event have empty defaults, so an observer overrides
// only what it records.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_allocator_event(const AllocatorEvent& event) = 0;
  virtual void on_kernel(const KernelActivity&) {}
  virtual void on_copy(const CopyActivity&) {}
  virtual void on_memset(const MemsetActivity&) {}
  virtual void on_sync(const SyncActivity&) {}
  virtual void on_api_call(const ApiCall&) {}
  virtual void on_nvtx(const NvtxEvent&) {}
  virtual void on_device_memory(const DeviceMemoryActivity&) {}
  virtual void on_event_timing(const EventTiming&) {}
};

namespace detail {
inline std::atomic<Observer*> installed_observer{nullptr};
}

inline void set_observer(Observer* observer) noexcept { detail::installed_observer.store(observer); }
inline Observer* observer() noexcept { return detail::installed_observer.load(std::memory_order_relaxed); }

// Correlation ids for ApiCall -> device activity; only drawn while an observer is installed.
inline std::uint32_t next_correlation_id() noexcept {
  static std::atomic<std::uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// The clock every runtime timestamp uses, and the one CUPTI is given for its records:
// CLOCK_MONOTONIC in nanoseconds (read through the invariant TSC where there is one, so a
// timestamp costs a few ns even where clock_gettime is a system call). Thread-safe.
std::uint64_t host_time_ns() noexcept;

// The CUDA graph replay the calling thread is running a node of: the sim backend sets it
// around each node, so the node's activity reports carry the cudaGraphLaunch's correlation
// id and the graph's id, as CUPTI's records of graph kernels do on a GPU. {0, 0} otherwise.
struct GraphReplay {
  std::uint32_t correlation_id = 0;
  std::uint32_t graph_id = 0;
};
GraphReplay current_graph_replay() noexcept;
void set_current_graph_replay(GraphReplay replay) noexcept;

}  // namespace cudascope::cuda::instrumentation
