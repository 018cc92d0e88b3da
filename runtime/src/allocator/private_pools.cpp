// CUDA graphs' private memory pools (PyTorch's Note [Interaction with CUDA graph capture]):
// while a graph captures, its allocations come from a pool of their own, so that memory a
// replay writes is never handed to anything else; the pool lives until the last graph using
// it is reset, and empty_cache then returns its unused segments.
#include "device_allocator.h"

#include "../check.h"

#include <algorithm>
#include <string>

namespace cudascope::cuda::detail::alloc {
namespace {
std::string pool_name(MempoolId id) {
  return "(" + std::to_string(id.first) + ", " + std::to_string(id.second) + ")";
}
}  // namespace

void DeviceAllocator::begin_allocate_to_pool(MempoolId id, StreamFilter filter) {
  std::lock_guard lock(mutex_);
  for (const auto& [underway, unused] : captures_underway_) {
    CUDASCOPE_CHECK(underway != id, error_code::kInvalidValue, "beginAllocateToPool",
                    "a capture is already allocating to memory pool " + pool_name(id));
  }
  auto it = graph_pools_.find(id);
  if (it == graph_pools_.end()) {
    graph_pools_.emplace(id, std::make_unique<PrivatePool>(id, &nodes_));
  } else {
    // Sharing a pool: some graph must still hold it (PyTorch asserts the same).
    CUDASCOPE_CHECK(it->second->use_count > 0, error_code::kInvalidValue, "beginAllocateToPool",
                    "memory pool " + pool_name(id) + " was released by every graph that used it; take a new one "
                    "from graph_pool_handle()");
    it->second->use_count++;
  }
  captures_underway_.emplace_back(id, std::move(filter));
}

void DeviceAllocator::end_allocate_to_pool(MempoolId id) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(captures_underway_.begin(), captures_underway_.end(),
                         [&](const auto& entry) { return entry.first == id; });
  CUDASCOPE_CHECK(it != captures_underway_.end(), error_code::kInvalidValue, "endAllocateToPool",
                  "no capture is allocating to memory pool " + pool_name(id));
  captures_underway_.erase(it);
}

void DeviceAllocator::release_pool(MempoolId id) {
  std::lock_guard lock(mutex_);
  auto it = graph_pools_.find(id);
  CUDASCOPE_CHECK(it != graph_pools_.end() && it->second->use_count > 0, error_code::kInvalidValue, "releasePool",
                  "memory pool " + pool_name(id) + " is not in use");
  if (--it->second->use_count == 0) graph_pools_freeable_.push_back(it->second.get());
}

int DeviceAllocator::pool_use_count(MempoolId id) {
  std::lock_guard lock(mutex_);
  auto it = graph_pools_.find(id);
  return it == graph_pools_.end() ? 0 : it->second->use_count;
}

PrivatePool* DeviceAllocator::capturing_pool(StreamHandle stream) {
  for (auto it = captures_underway_.rbegin(); it != captures_underway_.rend(); ++it) {
    if (it->second(stream)) return graph_pools_.at(it->first).get();
  }
  return nullptr;
}

void* DeviceAllocator::malloc_maybe_capturing(std::size_t size, bool capturing) {
  if (!capturing) [[likely]] return backend_.malloc(device_, size);
  const CaptureMode previous = backend_.exchange_thread_capture_mode(CaptureMode::kRelaxed);
  try {
    void* ptr = backend_.malloc(device_, size);
    backend_.exchange_thread_capture_mode(previous);
    return ptr;
  } catch (...) {
    backend_.exchange_thread_capture_mode(previous);
    throw;
  }
}

void DeviceAllocator::insert_events_deferred_until_no_capture(const ContextPtr& ctx) {
  if (deferred_until_no_capture_.empty()) [[likely]] return;
  for (Block* block : deferred_until_no_capture_) {
    insert_events(block);
    if (block->event_count == 0) free_block(block, ctx);
  }
  deferred_until_no_capture_.clear();
}

}  // namespace cudascope::cuda::detail::alloc
