#pragma once
// The reference counters of shared CUDA memory, as torch's CudaIPCRefCountersFile: files of
// kSlots 64-bit counters in POSIX shared memory, created by the producer, one slot per share.
// The producer sets a slot to 1 when it shares; the consumer decrements it when its last
// tensor on the memory goes; the producer frees the block once the slot reads 0.
// Thread-safety: RefCounters is thread-safe; decrement_counter may be called from anywhere.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cudascope::cuda::detail::ipc {

inline constexpr std::uint64_t kSlots = 10000;  // torch's CUDA_IPC_REF_COUNTER_FILE_SIZE

// One counter handed out to a share.
struct CounterSlot {
  std::string file;          // the shared-memory name
  std::uint64_t offset = 0;  // the slot in it
  std::int64_t* counter = nullptr;
};

class RefCounters {
 public:
  RefCounters();
  ~RefCounters();
  RefCounters(const RefCounters&) = delete;
  RefCounters& operator=(const RefCounters&) = delete;

  // A new slot, set to 1, from the current file (a new file when it is full).
  CounterSlot take();
  // Returns a slot (its share's block was freed); a full file with no slot in use goes.
  void give_back(const CounterSlot& slot);
  // Removes the current file when none of its slots is in use (ipc_collect).
  void drop_idle_current_file();

  // At exit: removes every file's name (consumers then release best effort, as when a
  // torch producer exits first); the mappings stay.
  void unlink_all() noexcept;

  std::size_t slots_in_use() const;
  std::size_t files() const;

 private:
  struct File;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<File>> files_;
  File* current_ = nullptr;
};

// The current value of a slot.
std::int64_t read_counter(const CounterSlot& slot) noexcept;

// The consumer's release: decrements `offset` in the file `file`. Best effort, as torch: false
// (with nothing done) when the file is gone because the producer exited.
bool decrement_counter(const std::string& file, std::uint64_t offset) noexcept;

}  // namespace cudascope::cuda::detail::ipc
