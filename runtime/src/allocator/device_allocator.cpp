// The allocation and free paths of one device (PyTorch's DeviceCachingAllocator::malloc,
// alloc_found_block, free and free_block), with the same statistics updates in the same
// places so that memory_stats() agrees number for number.
#include "device_allocator.h"

#include "oom_message.h"

#include "../check.h"

#include <cudascope/cuda/error.h>
#include <cudascope/cuda/instrumentation.h>

#include <algorithm>
#include <atomic>
#include <limits>

namespace cudascope::cuda::detail::alloc {
namespace {
std::atomic<FreeMemoryCallback> free_memory_callback{nullptr};
}  // namespace

void set_free_memory_callback(FreeMemoryCallback callback) noexcept { free_memory_callback.store(callback); }

bool DeviceAllocator::free_memory(std::unique_lock<DeviceLock>& lock) {
  const FreeMemoryCallback callback = free_memory_callback.load(std::memory_order_relaxed);
  if (callback == nullptr) [[likely]] return false;
  // The callback frees blocks through this allocator: it must not run under the lock.
  lock.unlock();
  bool freed = false;
  try {
    freed = callback();
  } catch (...) {
    // Freeing is best effort; the request goes on as if nothing was freed.
  }
  lock.lock();
  return freed;
}

DeviceAllocator::DeviceAllocator(int device, Backend& backend)
    : device_(device), backend_(backend), large_(false, &nodes_), small_(true, &nodes_) {}

DeviceAllocator::~DeviceAllocator() = default;  // the process-wide allocator is never destroyed

StreamStats* DeviceAllocator::stats_for(StreamHandle stream) {
  if (last_stream_stats_ < stream_stats_.size() && stream_stats_[last_stream_stats_].first == stream) {
    return stream_stats_[last_stream_stats_].second.get();
  }
  for (std::size_t i = 0; i < stream_stats_.size(); ++i) {
    if (stream_stats_[i].first == stream) {
      last_stream_stats_ = i;
      return stream_stats_[i].second.get();
    }
  }
  stream_stats_.emplace_back(stream, std::make_unique<StreamStats>());
  last_stream_stats_ = stream_stats_.size() - 1;
  return stream_stats_.back().second.get();
}

// PyTorch's round_size and roundup_power2_next_division.
std::size_t DeviceAllocator::round_size(std::size_t size) const {
  if (size < kMinBlockSize) return kMinBlockSize;
  const std::size_t divisions = config().divisions_for(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    if ((size & (size - 1)) == 0) return size;
    const std::size_t floor = std::size_t{1} << (63 - __builtin_clzll(size));
    const std::size_t step = floor >> (63 - __builtin_clzll(divisions));
    if (step == 0) return floor << 1;
    const std::size_t down = size & ~(step - 1);
    return down == size ? size : down + step;
  }
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::size_t DeviceAllocator::allocation_size(std::size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

bool DeviceAllocator::should_split(const Block* block, std::size_t size) const {
  const std::size_t remaining = block->size - size;
  if (block->pool->is_small || config().expandable_segments) return remaining >= kMinBlockSize;
  return size < config().max_split_size && remaining > kSmallSize;
}

void DeviceAllocator::notify_observer(instrumentation::Observer* o, Observed action, std::int64_t stream,
                                      std::uintptr_t addr, std::size_t size, const BlockPool* pool) {
  using E = instrumentation::AllocatorEvent;
  E event{action, device_, stream, addr, size, instrumentation::host_time_ns(),
          stats_.allocated_bytes[kAggregate].current, stats_.reserved_bytes[kAggregate].current};
  if (pool != nullptr && pool->owner != nullptr) {
    event.graph_pool[0] = pool->owner->id.first;
    event.graph_pool[1] = pool->owner->id.second;
  }
  o->on_allocator_event(event);
}

void* DeviceAllocator::malloc(std::size_t orig_size, StreamHandle stream, std::int64_t stream_id) {
  ContextPtr ctx = gather(RecordContext::kState);  // outside the lock: capture may be slow
  std::unique_lock lock(mutex_);
  // No event queries during a capture (cudaEventQuery is not allowed then): frees that wait
  // on events are processed once no capture is underway, as PyTorch does.
  if (captures_underway_.empty() && (!cuda_events_.empty() || !deferred_until_no_capture_.empty())) {
    process_events(ctx);
  }
  const std::size_t size = orig_size <= kMaxRequestSize ? round_size(orig_size) : 0;
  // round_size wraps past SIZE_MAX to a smaller size; such a request is refused, not served.
  CUDASCOPE_CHECK(size >= orig_size && size <= kMaxRequestSize, error_code::kInvalidValue, "caching_allocator_alloc",
                  "cannot allocate " + std::to_string(orig_size) + " bytes: the caching allocator rounds requests "
                  "of at most " + std::to_string(kMaxRequestSize) + " bytes (a negative size taken as unsigned?)");
  BlockPool& pool = pool_for(size, stream);
  AllocParams p{SizeKey{stream, size, 0}, &pool, allocation_size(size)};
  p.stream_stats = stats_for(stream);
  p.stream_id = stream_id;

  bool found = get_free_block(p) || (free_memory(lock) && get_free_block(p));
  if (!found) {
    if (set_fraction_ && config().garbage_collection_threshold > 0.0) garbage_collect_cached_blocks(ctx);
    found = alloc_block(p, false, ctx, lock) ||
            (release_available_cached_blocks(p, ctx) && alloc_block(p, false, ctx, lock)) ||
            (captures_underway_.empty() && release_cached_blocks(ctx) && alloc_block(p, true, ctx, lock));
  }
  if (!found) raise_oom(p, std::move(ctx), lock);
  const bool split = should_split(p.block, size);
  Block* block = alloc_found_block(p, orig_size, std::move(ctx), split);
  return block->ptr;
}

bool DeviceAllocator::get_free_block(AllocParams& p) {
  BlockPool& pool = *p.pool;
  const AllocatorConfig& cfg = config();
  if (set_fraction_ && cfg.garbage_collection_threshold > 0.0) ++pool.get_free_blocks_call_count;
  auto it = pool.blocks.lower_bound(p.key);
  if (it == pool.blocks.end() || (*it)->stream != p.key.stream) return false;
  if ((*it)->expandable) {
    if (cfg.expandable_segments) {
      // Best fit counts a block followed by unmapped space as the size it can grow to.
      auto expandable_size = [](const Block* b) {
        return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
      };
      auto next = std::next(it);
      while ((*it)->expandable && next != pool.blocks.end() && (*next)->stream == p.key.stream &&
             expandable_size(*next) < expandable_size(*it)) {
        it = next++;
      }
    } else {
      // Expandable segments were switched off: use only ordinary blocks.
      do {
        ++it;
      } while (it != pool.blocks.end() && (*it)->expandable && (*it)->stream == p.key.stream);
      if (it == pool.blocks.end() || (*it)->stream != p.key.stream) return false;
    }
  }
  // No oversize block for a request below max_split_size; oversize blocks serve larger
  // requests only within max_non_split_rounding_size.
  if (p.key.size < cfg.max_split_size && (*it)->size >= cfg.max_split_size) return false;
  if (p.key.size >= cfg.max_split_size && (*it)->size >= p.key.size + cfg.max_non_split_rounding_size) return false;
  p.block = *it;
  p.found_at = it;
  p.in_set = true;
  return true;
}

bool DeviceAllocator::alloc_block(AllocParams& p, bool is_retry, const ContextPtr& ctx,
                                  std::unique_lock<DeviceLock>& lock) {
  const std::size_t size = p.alloc_size;
  if (is_retry) stats_.num_alloc_retries += 1;
  // Bytes other threads are getting from cudaMalloc with the lock released count against the
  // fraction too: two threads cannot both pass this check and together exceed the limit.
  if (set_fraction_ && (total_allocated_memory_ + cudamalloc_pending_ > allowed_memory_maximum_ ||
                        size > allowed_memory_maximum_ - total_allocated_memory_ - cudamalloc_pending_)) {
    p.oom = true;
    return false;
  }
  if (config().expandable_segments) {
    p.block = try_allocate_expandable_block(p, ctx);
    p.oom = p.block == nullptr;
    return p.block != nullptr;
  }
  const bool capturing = !captures_underway_.empty();
  void* ptr = nullptr;
  if (config().release_lock_on_cudamalloc) {
    // PyTorch's release_lock_on_cudamalloc: cudaMalloc may take milliseconds; other threads
    // use this device's cache meanwhile. The new segment joins the pools after relocking,
    // and nothing found before the unlock is used after it.
    cudamalloc_pending_ += size;
    lock.unlock();
    try {
      ptr = malloc_maybe_capturing(size, capturing);
    } catch (...) {
      lock.lock();
      cudamalloc_pending_ -= size;
      throw;
    }
    lock.lock();
    cudamalloc_pending_ -= size;
  } else {
    ptr = malloc_maybe_capturing(size, capturing);
  }
  if (ptr == nullptr) {
    p.oom = true;
    return false;
  }
  total_allocated_memory_ += size;
  if (p.pool->owner != nullptr) p.pool->owner->segment_count++;
  Block* block = arena_.make();
  block->device = device_;
  block->stream = p.key.stream;
  block->stream_id = p.stream_id;
  block->size = size;
  block->pool = p.pool;
  block->ptr = static_cast<char*>(ptr);
  block->stream_stats = p.stream_stats;
  if (next_recorded_address_ < recorded_addresses_.size()) {
    block->order_delta = recorded_addresses_[next_recorded_address_++] - reinterpret_cast<std::uintptr_t>(ptr);
  }
  p.block = block;
  const int pool_index = p.pool->stat_index();
  stats_.segment.increase(pool_index, 1);
  stats_.reserved_bytes.increase(pool_index, static_cast<std::int64_t>(size));
  p.stream_stats->segment.increase(1);
  p.stream_stats->reserved_bytes.increase(static_cast<std::int64_t>(size));
  if (size >= config().max_split_size) stats_.oversize_segments.increase(1);
  stats_.num_device_alloc++;
  record(Action::kSegmentAlloc, reinterpret_cast<std::uintptr_t>(ptr), size, p.stream_id, ctx);
  block->context_when_segment_allocated = ctx;
  notify(Observed::kSegmentAlloc, p.stream_id, reinterpret_cast<std::uintptr_t>(ptr), size, p.pool);
  return true;
}

Block* DeviceAllocator::alloc_found_block(AllocParams& p, std::size_t orig_size, ContextPtr ctx, bool split) {
  const std::size_t size = p.key.size;
  BlockPool* pool = p.pool;
  const int pool_index = pool->stat_index();
  Block* block = p.block;
  const bool already_split = block->is_split();
  // A split remainder keeps the found block's node when its smaller key still sorts after
  // the node before it: the set's order holds without an extract and an insert (each a
  // rebalance), which is the common case of carving a small block off a large free one.
  bool remainder_in_place = false;
  if (p.in_set) {
    if (split) {
      const SizeKey shrunk{block->stream, block->size - size,
                           reinterpret_cast<std::uintptr_t>(block->ptr + size) + block->order_delta};
      remainder_in_place =
          p.found_at == pool->blocks.begin() || BySize::less(BySize::key(*std::prev(p.found_at)), shrunk);
    }
    if (!remainder_in_place) pool->take(p.found_at);
  }
  if (split) {
    Block* remaining = block;
    block = arena_.make();
    block->device = device_;
    block->stream = p.key.stream;
    block->stream_id = remaining->stream_id;
    block->size = size;
    block->pool = pool;
    block->ptr = remaining->ptr;
    block->expandable = remaining->expandable;
    block->stream_stats = remaining->stream_stats;
    block->order_delta = remaining->order_delta;
    block->prev = remaining->prev;
    if (block->prev) block->prev->next = block;
    block->next = remaining;
    remaining->prev = block;
    remaining->ptr += size;
    remaining->size -= size;
    if (remainder_in_place) {
      remaining->gc_count_base = pool->get_free_blocks_call_count;  // as insert() sets it
    } else {
      pool->insert(remaining);
    }
    if (already_split && !block->expandable) {
      // An already-split inactive block shrinks by `size`.
      stats_.inactive_split_bytes.decrease(pool_index, static_cast<std::int64_t>(block->size));
    } else if (!block->expandable) {
      // A new inactive split block of remaining->size appears.
      stats_.inactive_split_bytes.increase(pool_index, static_cast<std::int64_t>(remaining->size));
      stats_.inactive_split.increase(pool_index, 1);
    }
  } else if (already_split && !block->expandable) {
    stats_.inactive_split_bytes.decrease(pool_index, static_cast<std::int64_t>(block->size));
    stats_.inactive_split.decrease(pool_index, 1);
  }
  block->allocated = true;
  block->requested_size = orig_size;
  block->context_when_allocated = std::move(ctx);
  record(Action::kAlloc, reinterpret_cast<std::uintptr_t>(block->ptr), orig_size, block->stream_id,
         block->context_when_allocated);
  allocated_.insert(block->ptr, block);
  const auto bytes = static_cast<std::int64_t>(block->size);
  stats_.allocation.increase(pool_index, 1);
  stats_.allocated_bytes.increase(pool_index, bytes);
  stats_.active.increase(pool_index, 1);
  stats_.active_bytes.increase(pool_index, bytes);
  stats_.requested_bytes.increase(pool_index, static_cast<std::int64_t>(orig_size));
  StreamStats& ss = *block->stream_stats;
  ss.allocation.increase(1);
  ss.allocated_bytes.increase(bytes);
  ss.active.increase(1);
  ss.active_bytes.increase(bytes);
  ss.requested_bytes.increase(static_cast<std::int64_t>(orig_size));
  if (block->size >= config().max_split_size) stats_.oversize_allocations.increase(1);
  notify(Observed::kAlloc, block->stream_id, reinterpret_cast<std::uintptr_t>(block->ptr), block->size, block->pool);
  return block;
}

bool DeviceAllocator::free(void* ptr) {
  ContextPtr ctx = gather(RecordContext::kAll);
  std::lock_guard lock(mutex_);
  Block* block = allocated_.erase(ptr);
  if (block == nullptr) return false;
  block->allocated = false;
  const int pool_index = block->pool->stat_index();
  const auto bytes = static_cast<std::int64_t>(block->size);
  stats_.allocation.decrease(pool_index, 1);
  stats_.allocated_bytes.decrease(pool_index, bytes);
  block->stream_stats->allocation.decrease(1);
  block->stream_stats->allocated_bytes.decrease(bytes);
  // A free that completes now is one record for free_requested and free_completed: half
  // the history's cost of a free.
  const bool completes_now = block->stream_uses.empty();
  record(completes_now ? Action::kFree : Action::kFreeRequested, reinterpret_cast<std::uintptr_t>(block->ptr),
         block->requested_size, block->stream_id, ctx, block->context_when_allocated);
  if (block->size >= config().max_split_size) stats_.oversize_allocations.decrease(1);
  const auto address = reinterpret_cast<std::uintptr_t>(block->ptr);
  const std::int64_t stream_id = block->stream_id;
  const std::size_t size = block->size;
  if (!completes_now) {
    if (captures_underway_.empty()) [[likely]] {
      insert_events(block);
    } else {
      deferred_until_no_capture_.push_back(block);
    }
  } else {
    free_block(block, ctx, /*completion_recorded=*/true);
  }
  notify(Observed::kFree, stream_id, address, size);
  return true;
}

void DeviceAllocator::free_block(Block* block, const ContextPtr& ctx, bool completion_recorded) {
  if (!completion_recorded) {
    record(Action::kFreeCompleted, reinterpret_cast<std::uintptr_t>(block->ptr), block->requested_size,
           block->stream_id, ctx, block->context_when_allocated);
  }
  block->context_when_allocated = {};
  const std::size_t original_size = block->size;
  const std::size_t requested_size = block->requested_size;
  BlockPool& pool = *block->pool;
  std::int64_t net_blocks = 0;
  std::int64_t net_bytes = 0;
  for (Block* candidate : {block->prev, block->next}) {
    const std::size_t subsumed = try_merge_blocks(block, candidate, pool);
    if (subsumed > 0) {
      net_blocks -= 1;
      net_bytes -= static_cast<std::int64_t>(subsumed);
    }
  }
  pool.insert(block);
  if (block->is_split()) {
    net_blocks += 1;
    net_bytes += static_cast<std::int64_t>(block->size);
  }
  const int pool_index = pool.stat_index();
  // Expandable segments' free pages can always be released: PyTorch leaves them out of
  // inactive_split.
  if (!block->expandable) {
    if (net_blocks > 0) stats_.inactive_split.increase(pool_index, net_blocks);
    if (net_blocks < 0) stats_.inactive_split.decrease(pool_index, -net_blocks);
    if (net_bytes > 0) stats_.inactive_split_bytes.increase(pool_index, net_bytes);
    if (net_bytes < 0) stats_.inactive_split_bytes.decrease(pool_index, -net_bytes);
  }
  stats_.active.decrease(pool_index, 1);
  stats_.active_bytes.decrease(pool_index, static_cast<std::int64_t>(original_size));
  stats_.requested_bytes.decrease(pool_index, static_cast<std::int64_t>(requested_size));
  StreamStats& ss = *block->stream_stats;
  ss.active.decrease(1);
  ss.active_bytes.decrease(static_cast<std::int64_t>(original_size));
  ss.requested_bytes.decrease(static_cast<std::int64_t>(requested_size));
}

std::size_t DeviceAllocator::try_merge_blocks(Block* dst, Block* src, BlockPool& pool) {
  if (src == nullptr || src->allocated || src->event_count > 0 || !src->stream_uses.empty() ||
      dst->mapped != src->mapped) {
    return 0;
  }
  if (dst->prev == src) {  // [src dst]
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev) dst->prev->next = dst;
    dst->context_when_segment_allocated = std::move(src->context_when_segment_allocated);
  } else {  // [dst src]
    dst->next = src->next;
    if (dst->next) dst->next->prev = dst;
  }
  const std::size_t subsumed = src->size;
  dst->size += subsumed;
  if (src->mapped) {
    pool.remove(src);
  } else {
    pool.unmapped.erase(src);
  }
  arena_.recycle(src);
  return subsumed;
}

bool DeviceAllocator::record_stream(void* ptr, const StreamUse& use) {
  std::lock_guard lock(mutex_);
  Block* block = allocated_.find(ptr);
  if (block == nullptr) return false;
  // Uses on the allocation stream need no synchronisation.
  if (use.handle == block->stream && use.device == device_) return true;
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), use) == block->stream_uses.end()) {
    block->stream_uses.push_back(use);
  }
  return true;
}

bool DeviceAllocator::owns_allocation(const void* ptr) {
  std::lock_guard lock(mutex_);
  return allocated_.find(ptr) != nullptr;
}

[[noreturn]] void DeviceAllocator::raise_oom(AllocParams& p, ContextPtr ctx, std::unique_lock<DeviceLock>& lock) {
  const auto [device_free, device_total] = backend_.mem_get_info(device_);
  record(Action::kOom, device_free, p.key.size, p.stream_id, ctx);
  stats_.num_ooms += 1;
  OomFacts facts;
  facts.device = device_;
  facts.requested = p.alloc_size;
  facts.device_free = device_free;
  facts.device_total = device_total;
  facts.allowed = set_fraction_ ? allowed_memory_maximum_ : 0;
  facts.allocated = static_cast<std::size_t>(stats_.allocated_bytes[kAggregate].current);
  facts.reserved = static_cast<std::size_t>(stats_.reserved_bytes[kAggregate].current);
  for (const Block* b : small_.blocks) facts.largest_free_block = std::max(facts.largest_free_block, b->size);
  for (const Block* b : large_.blocks) facts.largest_free_block = std::max(facts.largest_free_block, b->size);
  notify(Observed::kOom, p.stream_id, 0, p.key.size);
  lock.unlock();
  throw OutOfMemoryError("caching_allocator_alloc", __FILE__, __LINE__, oom_message(facts));
}

DeviceStats DeviceAllocator::stats() {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::map<std::int64_t, StreamStats> DeviceAllocator::stream_stats() {
  std::lock_guard lock(mutex_);
  std::map<std::int64_t, StreamStats> out;
  for (const auto& [handle, s] : stream_stats_) {
    out[backend_.stream_id(device_, handle)] = *s;
  }
  return out;
}

void DeviceAllocator::reset_accumulated() {
  std::lock_guard lock(mutex_);
  stats_.reset_accumulated();
  for (auto& [handle, s] : stream_stats_) {
    for (Stat* stat : {&s->allocation, &s->allocated_bytes, &s->requested_bytes, &s->active, &s->active_bytes,
                       &s->segment, &s->reserved_bytes}) {
      stat->reset_accumulated();
    }
  }
}

void DeviceAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.reset_peak();
  for (auto& [handle, s] : stream_stats_) {
    for (Stat* stat : {&s->allocation, &s->allocated_bytes, &s->requested_bytes, &s->active, &s->active_bytes,
                       &s->segment, &s->reserved_bytes}) {
      stat->reset_peak();
    }
  }
}

void DeviceAllocator::set_memory_limit(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  allowed_memory_maximum_ = bytes;
  set_fraction_ = true;
}

std::size_t DeviceAllocator::set_recorded_addresses(std::vector<std::uintptr_t> addresses) {
  std::lock_guard lock(mutex_);
  const std::size_t used = next_recorded_address_;
  recorded_addresses_ = std::move(addresses);
  next_recorded_address_ = 0;
  return used;
}

void DeviceAllocator::clear_memory_limit() {
  std::lock_guard lock(mutex_);
  allowed_memory_maximum_ = 0;
  set_fraction_ = false;
}

std::size_t DeviceAllocator::memory_limit() const {
  std::lock_guard lock(mutex_);
  return allowed_memory_maximum_;
}

bool DeviceAllocator::has_memory_limit() const {
  std::lock_guard lock(mutex_);
  return set_fraction_;
}

std::size_t DeviceAllocator::live_allocations() {
  std::lock_guard lock(mutex_);
  return allocated_.size();
}

std::size_t DeviceAllocator::largest_free_block() {
  std::lock_guard lock(mutex_);
  std::size_t largest = 0;
  for (const Block* b : small_.blocks) largest = std::max(largest, b->size);
  for (const Block* b : large_.blocks) largest = std::max(largest, b->size);
  return largest;
}

void DeviceAllocator::set_history(const HistorySettings& settings) {
  std::lock_guard lock(mutex_);
  if (settings.record_trace && !record_trace_) trace_clock_.start();
  record_trace_ = settings.record_trace;
  trace_contexts_ = settings.when >= RecordContext::kAlloc;
  capture_.store(static_cast<unsigned>(settings.when) | (settings.cpp_stacks ? kCaptureStacks : 0u));
  trace_.set_max_entries(settings.max_entries);
  if (!settings.record_trace) trace_.release();
}

}  // namespace cudascope::cuda::detail::alloc
