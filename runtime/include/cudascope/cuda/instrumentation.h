#pragma once
// The runtime's instrumentation seam: the runtime reports what it does (allocator events,
// and on the sim backend the device activity a GPU would show CUPTI) to at most one
// Observer, which the profiler installs. With no observer installed a report costs one
// relaxed atomic load and a branch.
//
// Thread-safety: set_observer may be called from any thread; an Observer's methods are
// called from whichever thread did the work (streams' worker threads on sim) and must be
// thread-safe. The observer must outlive its installation (uninstall with nullptr first).

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cudascope::cuda::instrumentation {

// One allocator action, as the caching allocator's history names them.
struct AllocatorEvent {
  enum class Action : std::uint8_t { kAlloc, kFree, kSegmentAlloc, kSegmentFree, kSegmentMap, kSegmentUnmap, kOom };
  Action action;
  int device;
  std::int64_t stream_id;
  std::uintptr_t address;
  std::size_t size;
  std::uint64_t time_ns;          // host steady clock (see host_time_ns)
  std::int64_t allocated_bytes;   // the device's totals after the action
  std::int64_t reserved_bytes;
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_allocator_event(const AllocatorEvent& event) = 0;
};

namespace detail {
inline std::atomic<Observer*> installed_observer{nullptr};
}

inline void set_observer(Observer* observer) noexcept { detail::installed_observer.store(observer); }
inline Observer* observer() noexcept { return detail::installed_observer.load(std::memory_order_relaxed); }

// The clock every runtime timestamp uses: CLOCK_MONOTONIC in nanoseconds, the clock CUPTI
// timestamps are aligned to.
std::uint64_t host_time_ns() noexcept;

}  // namespace cudascope::cuda::instrumentation
