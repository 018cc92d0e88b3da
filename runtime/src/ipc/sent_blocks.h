#pragma once
// The producer's side of shared memory, as torch's CudaIPCSentData and CudaIPCSentDataLimbo:
// each share holds a counter slot and the event the consumer waits on; a shared storage
// lends its memory (Storage::lend), so when the producer lets go of it the block waits here
// until every share's counter reads 0, and only then returns to the caching allocator.
// Thread-safety: thread-safe.

#include "ref_counters.h"

#include <cudascope/cuda/event.h>

#include "../tensor/storage.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::detail::ipc {

class SentBlocks {
 public:
  explicit SentBlocks(RefCounters& counters) : counters_(counters) {}
  SentBlocks(const SentBlocks&) = delete;
  SentBlocks& operator=(const SentBlocks&) = delete;

  // Records one share of `storage` (its slot and event; event may be null when the producer
  // synchronised instead). The first share of a storage makes it lend its memory here.
  void add_share(const std::shared_ptr<Storage>& storage, CounterSlot slot, std::unique_ptr<Event> event);
  // Frees the released blocks whose counters all read 0; true when one was freed.
  bool collect();

  // At exit on the sim backend: destroys the shares' events, whose shared-memory names would
  // otherwise outlive the process (on cuda the driver reclaims them; destroying CUDA events
  // during exit is not safe).
  void drop_events_at_exit() noexcept;

  std::size_t lent_blocks() const;   // storage still in use by the producer
  std::size_t limbo_blocks() const;  // released by the producer, some counter above 0
  // Interprocess events held by shares; the caller synchronises instead past a limit, as
  // torch (CUDA_IPC_MAXIMUM_EVENTS_TO_USE).
  std::size_t events_in_use() const noexcept { return events_in_use_.load(); }

 private:
  struct Share {
    CounterSlot slot;
    std::unique_ptr<Event> event;
  };
  struct Block {
    bool released = false;
    std::vector<Share> shares;
  };
  void on_released(void* data);
  void drop(std::vector<Share>& shares);

  RefCounters& counters_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;  // by the storage's data pointer
  std::atomic<std::size_t> events_in_use_{0};
};

}  // namespace cudascope::cuda::detail::ipc
