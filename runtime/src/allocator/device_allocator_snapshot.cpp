// Looking at a device's allocator from outside: snapshots (PyTorch's segment/block view
// and trace) and the invariant check the property tests run after every step.
#include "device_allocator.h"

#include "../check.h"

#include <cudascope/cuda/instrumentation.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_set>

namespace cudascope::cuda::detail::alloc {

std::vector<const Block*> DeviceAllocator::all_blocks() const {
  std::vector<const Block*> blocks(small_.blocks.begin(), small_.blocks.end());
  blocks.insert(blocks.end(), large_.blocks.begin(), large_.blocks.end());
  for (const auto& [id, pool] : graph_pools_) {
    blocks.insert(blocks.end(), pool->small.blocks.begin(), pool->small.blocks.end());
    blocks.insert(blocks.end(), pool->large.blocks.begin(), pool->large.blocks.end());
  }
  allocated_.for_each([&](Block* b) { blocks.push_back(b); });
  std::unordered_set<const Block*> pending(deferred_until_no_capture_.begin(), deferred_until_no_capture_.end());
  for (const auto& p : cuda_events_) {
    for (const auto& [event, block] : p.events) pending.insert(block);
  }
  blocks.insert(blocks.end(), pending.begin(), pending.end());
  return blocks;
}

std::vector<memory::SegmentInfo> DeviceAllocator::segments_now(std::vector<ContextPtr>& contexts) const {
  std::vector<memory::SegmentInfo> segments;
  for (const Block* head : all_blocks()) {
    // Expandable segments: one segment per contiguous mapped range.
    if (head->prev && head->prev->mapped) continue;
    memory::SegmentInfo s;
    s.device = device_;
    s.address = reinterpret_cast<std::uintptr_t>(head->ptr);
    s.stream = head->stream_id;
    s.segment_type = head->pool->is_small ? "small" : "large";
    s.is_expandable = head->expandable != nullptr;
    // PyTorch's segment_pool_id: the owning private pool's id, (0, 0) for the device's own.
    if (const PrivatePool* owner = head->pool->owner) {
      s.segment_pool_id = {static_cast<std::int64_t>(owner->id.first), static_cast<std::int64_t>(owner->id.second)};
    }
    contexts.push_back(head->context_when_segment_allocated);
    for (const Block* b = head; b != nullptr && b->mapped; b = b->next) {
      memory::BlockInfo info;
      info.address = reinterpret_cast<std::uintptr_t>(b->ptr);
      info.size = b->size;
      info.requested_size = b->requested_size;
      const bool active = b->allocated || b->event_count > 0 || !b->stream_uses.empty();
      info.state = b->allocated ? "active_allocated" : active ? "active_pending_free" : "inactive";
      contexts.push_back(b->context_when_allocated);
      s.total_size += b->size;
      if (b->allocated) s.allocated_size += b->size;
      if (active) {
        s.active_size += b->size;
        s.requested_size += b->requested_size;
      }
      s.blocks.push_back(std::move(info));
    }
    segments.push_back(std::move(s));
  }
  return segments;
}

namespace {
// Frames for each segment and its blocks, from the contexts segments_now() gave, in order.
void symbolize(std::vector<memory::SegmentInfo>& segments, const std::vector<ContextPtr>& contexts,
               Symbolizer& symbolizer) {
  std::size_t next = 0;
  for (auto& s : segments) {
    s.frames = symbolizer.frames(contexts[next++]);
    for (auto& b : s.blocks) b.frames = symbolizer.frames(contexts[next++]);
  }
}

// The trace entries of `records` (oldest first), the newest `max_entries` of them.
void append_trace(const std::vector<TraceRecord>& records, const TraceClock::ToNs& to_ns, std::size_t max_entries,
                  std::int64_t epoch_offset_ns, Symbolizer& symbolizer, std::vector<memory::TraceEntry>& trace) {
  const std::size_t first = trace.size();
  trace.reserve(first + records.size());
  for (const TraceRecord& r : records) {
    memory::TraceEntry e;
    e.action = action_name(r.action());
    if (r.action() == Action::kOom) {
      e.device_free = r.addr;
    } else {
      e.addr = r.addr;
    }
    e.size = r.size;
    e.stream = r.stream;
    e.time_us = (static_cast<std::int64_t>(to_ns(r.ticks)) + epoch_offset_ns) / 1000;
    e.user_metadata = join_nvtx(r.context());
    e.frames = symbolizer.frames(r.context());
    if (r.action() == Action::kFree) {
      trace.push_back(e);
      e.action = action_name(Action::kFreeCompleted);
    }
    trace.push_back(std::move(e));
  }
  // max_entries counts trace entries, as PyTorch's does: a kFree record made two.
  if (trace.size() - first > max_entries) {
    const auto excess = static_cast<std::ptrdiff_t>(trace.size() - first - max_entries);
    trace.erase(trace.begin() + static_cast<std::ptrdiff_t>(first), trace.begin() + static_cast<std::ptrdiff_t>(first) + excess);
  }
}
}  // namespace

void DeviceAllocator::snapshot(std::vector<memory::SegmentInfo>& segments, std::vector<memory::TraceEntry>& trace,
                               Symbolizer& symbolizer, std::int64_t epoch_offset_ns) {
  // Symbolising reads ELF symbol tables, and a whole ring's records take a while to turn
  // into entries: allocations on the device must not wait for either.
  std::vector<memory::SegmentInfo> mine;
  std::vector<ContextPtr> contexts;
  std::vector<TraceRecord> records;
  TraceClock::ToNs to_ns{};
  std::size_t max_entries = 0;
  {
    std::lock_guard lock(mutex_);
    mine = segments_now(contexts);
    to_ns = trace_clock_.to_ns();
    max_entries = trace_.max_entries();
    records.reserve(trace_.size());
    trace_.for_each([&](const TraceRecord& r) { records.push_back(r); });
    if (record_trace_) {
      // PyTorch records the snapshot itself in the trace.
      std::size_t total_active = 0;
      for (const auto& s : mine) total_active += s.active_size;
      trace_.insert(TraceRecord{Action::kSnapshot, 0, total_active, 0, trace_clock_.now(), {}});
    }
  }
  symbolize(mine, contexts, symbolizer);
  std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  for (auto& s : mine) segments.push_back(std::move(s));
  append_trace(records, to_ns, max_entries, epoch_offset_ns, symbolizer, trace);
}

std::string DeviceAllocator::check_invariants() {
  std::lock_guard lock(mutex_);
  std::ostringstream err;
  std::vector<const Block*> blocks = all_blocks();
  std::vector<const BlockPool*> pools{&small_, &large_};
  for (const auto& [id, pool] : graph_pools_) {
    pools.push_back(&pool->small);
    pools.push_back(&pool->large);
  }
  for (const BlockPool* pool : pools) {
    blocks.insert(blocks.end(), pool->unmapped.begin(), pool->unmapped.end());
  }
  std::unordered_set<const Block*> seen;
  DeviceStats recount;
  StatArray& seg = recount.segment;
  std::int64_t reserved_total = 0;
  for (const Block* b : blocks) {
    if (!seen.insert(b).second) {
      err << "block " << static_cast<const void*>(b->ptr) << " is in two places; ";
      continue;
    }
  }
  for (const Block* head : seen) {
    if (head->prev != nullptr) continue;
    const int pool = head->pool->stat_index();
    if (!head->expandable) seg.increase(pool, 1);
    for (const Block* b = head; b != nullptr; b = b->next) {
      if (!seen.count(b)) err << "block " << static_cast<const void*>(b->ptr) << " is not tracked; ";
      if (b->next && b->next->prev != b) err << "broken links at " << static_cast<const void*>(b->ptr) << "; ";
      if (b->next && b->ptr + b->size != b->next->ptr) {
        err << "blocks at " << static_cast<const void*>(b->ptr) << " do not tile their segment; ";
      }
      if (b->stream != head->stream || b->pool != head->pool || b->expandable != head->expandable) {
        err << "block " << static_cast<const void*>(b->ptr) << " differs from its segment; ";
      }
      const bool free_now = !b->allocated && b->event_count == 0 && b->stream_uses.empty();
      if (b->mapped) {
        recount.reserved_bytes.increase(pool, static_cast<std::int64_t>(b->size));
        reserved_total += static_cast<std::int64_t>(b->size);
      }
      if (b->allocated) {
        recount.allocation.increase(pool, 1);
        recount.allocated_bytes.increase(pool, static_cast<std::int64_t>(b->size));
        if (allocated_.find(b->ptr) != b) err << "allocated block missing from the pointer map; ";
      }
      if (!free_now && b->mapped) {
        recount.active.increase(pool, 1);
        recount.active_bytes.increase(pool, static_cast<std::int64_t>(b->size));
        recount.requested_bytes.increase(pool, static_cast<std::int64_t>(b->requested_size));
      }
      if (free_now && b->mapped) {
        if (!b->pool->blocks.count(const_cast<Block*>(b))) err << "free block not in its pool; ";
        if (b->is_split() && !b->expandable) {
          recount.inactive_split.increase(pool, 1);
          recount.inactive_split_bytes.increase(pool, static_cast<std::int64_t>(b->size));
        }
        const Block* n = b->next;
        if (n && n->mapped && !n->allocated && n->event_count == 0 && n->stream_uses.empty()) {
          err << "adjacent free blocks not merged at " << static_cast<const void*>(b->ptr) << "; ";
        }
      }
    }
  }
  auto compare = [&](const char* name, const StatArray& kept, const StatArray& counted) {
    for (int i = 0; i < 3; ++i) {
      if (kept[i].current != counted[i].current) {
        err << name << "[" << i << "].current is " << kept[i].current << ", recount " << counted[i].current << "; ";
      }
    }
  };
  compare("segment", stats_.segment, recount.segment);
  compare("reserved_bytes", stats_.reserved_bytes, recount.reserved_bytes);
  compare("allocation", stats_.allocation, recount.allocation);
  compare("allocated_bytes", stats_.allocated_bytes, recount.allocated_bytes);
  compare("active", stats_.active, recount.active);
  compare("active_bytes", stats_.active_bytes, recount.active_bytes);
  compare("requested_bytes", stats_.requested_bytes, recount.requested_bytes);
  compare("inactive_split", stats_.inactive_split, recount.inactive_split);
  compare("inactive_split_bytes", stats_.inactive_split_bytes, recount.inactive_split_bytes);
  if (static_cast<std::int64_t>(total_allocated_memory_) != reserved_total) {
    err << "total_allocated_memory " << total_allocated_memory_ << " but mapped blocks sum to " << reserved_total
        << "; ";
  }
  for (const auto* a : {&stats_.allocation, &stats_.allocated_bytes, &stats_.segment, &stats_.reserved_bytes}) {
    if ((*a)[kAggregate].peak < (*a)[kAggregate].current) err << "a peak is below its current value; ";
  }
  return err.str();
}

}  // namespace cudascope::cuda::detail::alloc

namespace cudascope::cuda::detail::alloc {

std::pair<void*, std::size_t> DeviceAllocator::base_allocation(const void* ptr) {
  std::lock_guard lock(mutex_);
  const Block* block = allocated_.find(ptr);
  if (block == nullptr) return {nullptr, 0};
  CUDASCOPE_CHECK(block->expandable == nullptr, error_code::kNotSupported, "getBaseAllocation",
                  "the block is in an expandable segment, which cannot be shared as one allocation "
                  "(set expandable_segments:False to share tensors between processes)");
  while (block->prev != nullptr) block = block->prev;
  std::size_t size = 0;
  for (const Block* b = block; b != nullptr; b = b->next) size += b->size;
  return {block->ptr, size};
}

PointerKind DeviceAllocator::classify(const void* ptr) {
  std::lock_guard lock(mutex_);
  if (allocated_.find(ptr) != nullptr) return PointerKind::kAllocated;
  const auto* p = static_cast<const char*>(ptr);
  for (const Block* b : all_blocks()) {
    if (b->ptr == p && !b->allocated) return PointerKind::kFreeBlock;
    if (p > b->ptr && p < b->ptr + b->size) return PointerKind::kInsideBlock;
  }
  return PointerKind::kUnknown;
}

}  // namespace cudascope::cuda::detail::alloc
