// Returning memory: releasing cached segments (empty_cache, the OOM retries, garbage
// collection), expandable segments' map/unmap, and stream-ordered frees through events
// (record_stream). PyTorch's algorithm, step for step.
#include "device_allocator.h"

#include <cudascope/cuda/error.h>

#include <algorithm>
#include <limits>
#include <string_view>

namespace cudascope::cuda::detail::alloc {

void DeviceAllocator::empty_cache() {
  ContextPtr ctx = gather(RecordContext::kAll);
  std::lock_guard lock(mutex_);
  release_cached_blocks(ctx);
}

bool DeviceAllocator::release_available_cached_blocks(const AllocParams& p, const ContextPtr& ctx) {
  const std::size_t max_split = config().max_split_size;
  if (max_split == std::numeric_limits<std::size_t>::max()) return false;
  BlockPool& pool = *p.pool;
  SizeKey key = p.key;
  key.size = key.size < max_split ? max_split : key.size;
  auto it = pool.blocks.lower_bound(key);
  if (it == pool.blocks.end() || (*it)->stream != p.key.stream) {
    // No single block is large enough: free oversize blocks, largest first.
    if (it == pool.blocks.begin()) return false;
    std::size_t released = 0;
    --it;
    while (released < key.size && (*it)->size >= max_split && (*it)->stream == p.key.stream) {
      auto current = it;
      released += (*it)->size;
      if (it != pool.blocks.begin()) {
        --it;
        release_block(*current, ctx);
      } else {
        release_block(*current, ctx);
        break;
      }
    }
    if (released < key.size) return false;
  } else {
    release_block(*it, ctx);
  }
  return true;
}

// The device's own pools only when no capture is underway (synchronising is not allowed
// then); the unused segments of private pools no graph uses any more in any case, as PyTorch.
bool DeviceAllocator::release_cached_blocks(const ContextPtr& ctx) {
  if (captures_underway_.empty()) {
    synchronize_and_free_events(ctx);
    release_blocks(large_, ctx);
    release_blocks(small_, ctx);
  }
  for (auto it = graph_pools_freeable_.begin(); it != graph_pools_freeable_.end();) {
    PrivatePool* pool = *it;
    release_blocks(pool->small, ctx);
    release_blocks(pool->large, ctx);
    if (pool->segment_count == 0) {
      const MempoolId id = pool->id;
      it = graph_pools_freeable_.erase(it);
      graph_pools_.erase(id);
    } else {
      ++it;
    }
  }
  return true;
}

void DeviceAllocator::release_blocks(BlockPool& pool, const ContextPtr& ctx) {
  std::vector<Block*> to_unmap;
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    ++it;
    if (block->expandable) {
      to_unmap.push_back(block);  // unmapping changes the pool: gather first
    } else if (!block->prev && !block->next) {
      release_block(block, ctx);
    }
  }
  for (Block* block : to_unmap) {
    unmap_block(block, ctx);
    if (!block->prev && !block->next) release_expandable_segment(block);
  }
}

void DeviceAllocator::release_block(Block* block, const ContextPtr& ctx) {
  stats_.num_device_free++;
  record(Action::kSegmentFree, reinterpret_cast<std::uintptr_t>(block->ptr), block->size, block->stream_id,
         ctx, block->context_when_segment_allocated);
  backend_.free(device_, block->ptr);
  total_allocated_memory_ -= block->size;
  if (block->pool->owner != nullptr) block->pool->owner->segment_count--;
  const int pool_index = block->pool->stat_index();
  stats_.segment.decrease(pool_index, 1);
  stats_.reserved_bytes.decrease(pool_index, static_cast<std::int64_t>(block->size));
  block->stream_stats->segment.decrease(1);
  block->stream_stats->reserved_bytes.decrease(static_cast<std::int64_t>(block->size));
  if (block->size >= config().max_split_size) stats_.oversize_segments.decrease(1);
  notify(Observed::kSegmentFree, block->stream_id, reinterpret_cast<std::uintptr_t>(block->ptr), block->size);
  block->pool->remove(block);
  arena_.recycle(block);
}

void DeviceAllocator::garbage_collect_cached_blocks(const ContextPtr& ctx) {
  // Frees old unsplit cached blocks without synchronising (cheaper than empty_cache).
  const auto threshold = static_cast<std::size_t>(config().garbage_collection_threshold *
                                                  static_cast<double>(allowed_memory_maximum_));
  if (total_allocated_memory_ <= threshold) return;
  const std::size_t target = total_allocated_memory_ - threshold;
  std::size_t reclaimed = 0;
  auto age = [&](const Block* b) {
    return static_cast<std::size_t>(static_cast<int>(large_.get_free_blocks_call_count - b->gc_count_base));
  };
  std::size_t total_age = 0;
  int freeable = 0;
  for (const Block* b : large_.blocks) {
    if (!b->is_split()) {
      total_age += age(b);
      ++freeable;
    }
  }
  if (freeable == 0) return;
  bool freed = true;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / freeable;
    freed = false;
    for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
      Block* block = *it;
      ++it;
      if (!block->is_split() && static_cast<double>(age(block)) >= age_threshold) {
        freed = true;
        reclaimed += block->size;
        total_age -= age(block);
        --freeable;
        release_block(block, ctx);
      }
    }
  }
}

// ---- expandable segments ----

Block* DeviceAllocator::find_expandable_block(StreamHandle stream, std::int64_t stream_id, BlockPool* pool,
                                              std::size_t size, StreamStats* stream_stats) {
  auto allocatable = [](const Block* b) {
    return b && !b->allocated && b->event_count == 0 && b->stream_uses.empty();
  };
  auto has_space = [&](Block* b) {
    std::size_t bytes = 0;
    while (bytes < size && allocatable(b)) {
      bytes += b->size;
      b = b->next;
    }
    return bytes >= size;
  };
  for (auto it = pool->unmapped.lower_bound(SizeKey{stream, 0, 0});
       it != pool->unmapped.end() && (*it)->stream == stream; ++it) {
    Block* c = *it;
    if (allocatable(c->prev)) c = c->prev;  // a free block just before the unmapped space
    if (has_space(c)) return c;
  }
  const std::size_t page = pool->is_small ? kSmallBuffer : kLargeBuffer;
  const std::size_t total = backend_.properties(device_).total_memory;
  // Address space for 1 1/8 of the device, as PyTorch reserves on every backend (the
  // unmapped tail's size decides best fit among unmapped blocks; expandable_segment.h).
  const std::size_t address_space = total + total / 8;
  auto* segment = new ExpandableSegment(backend_, device_, stream, address_space, page);
  expandable_segments_.push_back(segment);
  Block* candidate = arena_.make();
  candidate->device = device_;
  candidate->stream = stream;
  candidate->stream_id = stream_id;
  candidate->size = segment->size();
  candidate->pool = pool;
  candidate->ptr = segment->ptr();
  candidate->mapped = false;
  candidate->expandable = segment;
  candidate->stream_stats = stream_stats;
  pool->unmapped.insert(candidate);
  return candidate;
}

bool DeviceAllocator::map_block(Block* to_map, std::size_t size, const ContextPtr& ctx) {
  const Range mapped = to_map->expandable->map(Range{to_map->ptr, size});
  if (mapped.size == 0) return false;
  BlockPool& pool = *to_map->pool;
  pool.unmapped.erase(to_map);
  to_map->mapped = true;
  if (mapped.size < to_map->size) {
    Block* remaining = arena_.make();
    remaining->device = device_;
    remaining->stream = to_map->stream;
    remaining->stream_id = to_map->stream_id;
    remaining->size = to_map->size - mapped.size;
    remaining->pool = &pool;
    remaining->ptr = to_map->ptr + mapped.size;
    remaining->mapped = false;
    remaining->expandable = to_map->expandable;
    remaining->stream_stats = to_map->stream_stats;
    remaining->order_delta = to_map->order_delta;
    remaining->prev = to_map;
    remaining->next = to_map->next;
    if (to_map->next) to_map->next->prev = remaining;
    to_map->next = remaining;
    pool.unmapped.insert(remaining);
    to_map->size = mapped.size;
  }
  try_merge_blocks(to_map, to_map->prev, pool);
  try_merge_blocks(to_map, to_map->next, pool);
  pool.insert(to_map);
  total_allocated_memory_ += mapped.size;
  if (pool.owner != nullptr) pool.owner->segment_count++;  // one per mapping, as unmap_block counts down
  stats_.reserved_bytes.increase(pool.stat_index(), static_cast<std::int64_t>(mapped.size));
  to_map->stream_stats->reserved_bytes.increase(static_cast<std::int64_t>(mapped.size));
  stats_.num_device_alloc++;
  record(Action::kSegmentMap, reinterpret_cast<std::uintptr_t>(mapped.ptr), mapped.size, to_map->stream_id, ctx);
  if (!to_map->prev && !to_map->context_when_segment_allocated) to_map->context_when_segment_allocated = ctx;
  notify(Observed::kSegmentMap, to_map->stream_id, reinterpret_cast<std::uintptr_t>(mapped.ptr), mapped.size);
  return true;
}

Block* DeviceAllocator::try_allocate_expandable_block(AllocParams& p, const ContextPtr& ctx) {
  const std::size_t size = p.key.size;
  Block* candidate = find_expandable_block(p.key.stream, p.stream_id, p.pool, size, p.stream_stats);
  if (!candidate->mapped && !map_block(candidate, std::min(candidate->size, size), ctx)) return nullptr;
  while (candidate->size < size) {
    // free -> unmapped -> ...: map some of the unmapped stretch, which merges into candidate.
    const std::size_t remaining = size - candidate->size;
    Block* next = candidate->next;
    if (!map_block(next, std::min(remaining, next->size), ctx)) return nullptr;
    candidate = next;
  }
  p.pool->remove(candidate);
  return candidate;
}

void DeviceAllocator::unmap_block(Block* block, const ContextPtr& ctx) {
  const Range unmapped = block->expandable->unmap(Range{block->ptr, block->size});
  if (unmapped.size == 0) return;
  BlockPool& pool = *block->pool;
  pool.remove(block);
  const auto before = static_cast<std::size_t>(unmapped.ptr - block->ptr);
  auto make_free = [&](char* ptr, std::size_t size) {
    Block* b = arena_.make();
    b->device = device_;
    b->stream = block->stream;
    b->stream_id = block->stream_id;
    b->size = size;
    b->pool = &pool;
    b->ptr = ptr;
    b->expandable = block->expandable;
    b->stream_stats = block->stream_stats;
    b->order_delta = block->order_delta;
    return b;
  };
  if (before > 0) {
    Block* before_free = make_free(block->ptr, before);
    before_free->prev = block->prev;
    if (block->prev) block->prev->next = before_free;
    before_free->next = block;
    block->prev = before_free;
    pool.insert(before_free);
  }
  const std::size_t after = block->size - (before + unmapped.size);
  if (after > 0) {
    Block* after_free = make_free(unmapped.ptr + unmapped.size, after);
    after_free->next = block->next;
    if (block->next) block->next->prev = after_free;
    after_free->prev = block;
    block->next = after_free;
    pool.insert(after_free);
  }
  block->ptr = unmapped.ptr;
  block->size = unmapped.size;
  block->mapped = false;
  try_merge_blocks(block, block->prev, pool);
  try_merge_blocks(block, block->next, pool);
  pool.unmapped.insert(block);
  total_allocated_memory_ -= unmapped.size;
  if (pool.owner != nullptr) pool.owner->segment_count--;
  stats_.reserved_bytes.decrease(pool.stat_index(), static_cast<std::int64_t>(unmapped.size));
  block->stream_stats->reserved_bytes.decrease(static_cast<std::int64_t>(unmapped.size));
  stats_.num_device_free++;
  record(Action::kSegmentUnmap, reinterpret_cast<std::uintptr_t>(unmapped.ptr), unmapped.size, block->stream_id,
         ctx, block->context_when_segment_allocated);
  notify(Observed::kSegmentUnmap, block->stream_id, reinterpret_cast<std::uintptr_t>(unmapped.ptr), unmapped.size);
}

void DeviceAllocator::release_expandable_segment(Block* block) {
  auto it = std::find(expandable_segments_.begin(), expandable_segments_.end(), block->expandable);
  if (it != expandable_segments_.end()) expandable_segments_.erase(it);
  block->pool->unmapped.erase(block);
  delete block->expandable;
  arena_.recycle(block);
}

// ---- stream-ordered frees ----

EventHandle DeviceAllocator::get_event(int device) {
  for (auto it = event_pool_.begin(); it != event_pool_.end(); ++it) {
    if (it->first == device) {
      EventHandle e = it->second;
      event_pool_.erase(it);
      return e;
    }
  }
  return backend_.event_create(device, EventFlags{});
}

void DeviceAllocator::insert_events(Block* block) {
  std::vector<StreamUse> streams = std::move(block->stream_uses);
  block->stream_uses.clear();
  for (const StreamUse& use : streams) {
    EventHandle event = get_event(use.device);
    backend_.event_record(use.device, event, use.handle);
    block->event_count++;
    auto slot = std::find_if(cuda_events_.begin(), cuda_events_.end(),
                             [&](const PendingEvents& p) { return p.stream == use; });
    if (slot == cuda_events_.end()) {
      cuda_events_.push_back(PendingEvents{use, {}});
      slot = std::prev(cuda_events_.end());
    }
    slot->events.emplace_back(event, block);
  }
}

void DeviceAllocator::process_events(const ContextPtr& ctx) {
  insert_events_deferred_until_no_capture(ctx);
  for (auto it = cuda_events_.begin(); it != cuda_events_.end();) {
    while (!it->events.empty()) {
      auto [event, block] = it->events.front();
      if (!backend_.event_query(it->stream.device, event)) break;
      event_pool_.emplace_back(it->stream.device, event);
      if (--block->event_count == 0) free_block(block, ctx);
      it->events.pop_front();
    }
    it = it->events.empty() ? cuda_events_.erase(it) : std::next(it);
  }
}

void DeviceAllocator::synchronize_and_free_events(const ContextPtr& ctx) {
  stats_.num_sync_all_streams++;
  insert_events_deferred_until_no_capture(ctx);
  for (auto& pending : cuda_events_) {
    for (auto& [event, block] : pending.events) {
      backend_.event_synchronize(pending.stream.device, event);
      event_pool_.emplace_back(pending.stream.device, event);
      if (--block->event_count == 0) free_block(block, ctx);
    }
  }
  cuda_events_.clear();
}

}  // namespace cudascope::cuda::detail::alloc
