#include "sent_blocks.h"

#include <cudascope/cuda/memory.h>

namespace cudascope::cuda::detail::ipc {

void SentBlocks::add_share(const std::shared_ptr<Storage>& storage, CounterSlot slot, std::unique_ptr<Event> event) {
  if (event) events_in_use_.fetch_add(1);
  std::lock_guard lock(mutex_);
  Block& block = blocks_[storage->data()];
  block.shares.push_back({std::move(slot), std::move(event)});
  if (!storage->is_lent()) storage->lend([this](void* data) { on_released(data); });
}

void SentBlocks::on_released(void* data) {
  {
    std::lock_guard lock(mutex_);
    if (auto found = blocks_.find(data); found != blocks_.end()) found->second.released = true;
  }
  // As torch's CudaIPCSentDataDelete: a release is also a chance to free earlier ones.
  collect();
}

bool SentBlocks::collect() {
  std::vector<void*> freed;
  std::vector<Share> done;
  {
    std::lock_guard lock(mutex_);
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      Block& block = it->second;
      if (!block.released) {
        ++it;
        continue;
      }
      // A share whose consumer has released is done; the block goes with its last share.
      std::vector<Share> kept;
      for (Share& share : block.shares) {
        (read_counter(share.slot) > 0 ? kept : done).push_back(std::move(share));
      }
      block.shares = std::move(kept);
      if (block.shares.empty()) {
        freed.push_back(it->first);
        it = blocks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Outside the lock: freeing may call back into the runtime.
  drop(done);
  for (void* data : freed) caching_allocator_delete(data);
  return !freed.empty();
}

void SentBlocks::drop(std::vector<Share>& shares) {
  for (Share& share : shares) {
    counters_.give_back(share.slot);
    if (share.event) {
      share.event.reset();
      events_in_use_.fetch_sub(1);
    }
  }
  shares.clear();
}

void SentBlocks::drop_events_at_exit() noexcept {
  std::lock_guard lock(mutex_);
  for (auto& [data, block] : blocks_) {
    for (Share& share : block.shares) {
      try {
        share.event.reset();
      } catch (...) {
      }
    }
  }
}

std::size_t SentBlocks::lent_blocks() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [data, block] : blocks_) count += block.released ? 0 : 1;
  return count;
}

std::size_t SentBlocks::limbo_blocks() const {
  std::lock_guard lock(mutex_);
  return blocks_.size() - [&] {
    std::size_t alive = 0;
    for (const auto& [data, block] : blocks_) alive += block.released ? 0 : 1;
    return alive;
  }();
}

}  // namespace cudascope::cuda::detail::ipc
