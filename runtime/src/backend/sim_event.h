#pragma once
// A simulated event. Its state (how many records were issued, how many have completed, and
// the time of the last completion) lives in plain memory, or for an interprocess event in
// a POSIX shared-memory object another process can open from the IPC handle.

#include <cudascope/cuda/event.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace cudascope::cuda::detail {

struct SimEventState {
  std::atomic<std::uint64_t> issued{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::int64_t> completed_at_ns{0};

  void complete(std::uint64_t generation) noexcept;
  bool reached(std::uint64_t generation) const noexcept { return completed.load() >= generation; }
  // Blocks until `generation` completes (polling, as the state may be in another process).
  void wait_for(std::uint64_t generation) const;
};

// Work queued on a stream holds the state, not the event: CUDA lets an event be destroyed
// while a record or a wait on it is still pending.
using SharedEventState = std::shared_ptr<SimEventState>;

class SimEvent {
 public:
  SimEvent(int device, bool enable_timing, bool interprocess);
  // Opens the shared state named by `handle` (from another process's ipc_handle()).
  SimEvent(int device, const IpcEventHandle& handle);
  ~SimEvent();
  SimEvent(const SimEvent&) = delete;
  SimEvent& operator=(const SimEvent&) = delete;

  // The generation a new record will complete; the stream calls state()->complete(g)
  // when it gets there.
  std::uint64_t issue() noexcept { return state_->issued.fetch_add(1) + 1; }
  std::uint64_t issued() const noexcept { return state_->issued.load(); }
  bool done() const noexcept { return state_->reached(issued()); }
  const SharedEventState& state() const noexcept { return state_; }
  std::int64_t completed_at_ns() const noexcept { return state_->completed_at_ns.load(); }

  int device() const noexcept { return device_; }
  bool timing() const noexcept { return enable_timing_; }
  IpcEventHandle ipc_handle() const;

 private:
  int device_;
  bool enable_timing_;
  std::string shm_name_;
  SharedEventState state_;
};

}  // namespace cudascope::cuda::detail
