#include <cudascope/analysis/allocator_replay.h>

#include <algorithm>
#include <unordered_map>

namespace cudascope::analysis {
namespace {
constexpr size_t kCheckpointBudget = size_t{64} << 20;
}

AllocatorReplay::AllocatorReplay(const Snapshot& snap, int device) : snap_(snap), range_(snap.device_trace(device)) {
  const auto& trace = snap.trace;
  // Pair each free with the alloc it ends, so undoing a free restores the right stack.
  partner_.assign(range_.size(), UINT32_MAX);
  std::unordered_map<uint64_t, uint32_t> open;
  for (uint32_t i = range_.begin; i < range_.end; ++i) {
    const TraceEntry& e = trace[i];
    if (e.action == Action::alloc) open[e.addr] = i;
    else if (e.action == Action::free_requested || e.action == Action::free_completed) {
      if (auto it = open.find(e.addr); it != open.end()) {
        partner_[i - range_.begin] = it->second;
        if (e.action == Action::free_completed) open.erase(it);
      }
    }
  }

  // The snapshot's own state is the state after the last entry.
  for (const Segment& s : snap.segments) {
    if (s.device != device) continue;
    segs_[s.address] = Seg{s.total_size, s.stream};
    for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
      const Block& blk = snap.blocks[b];
      if (blk.state == BlockState::inactive) continue;
      auto it = open.find(blk.address);
      blocks_[blk.address] = Blk{blk.size, blk.state, it == open.end() ? UINT32_MAX : it->second, blk.stack};
    }
  }
  at_ = static_cast<int64_t>(range_.end) - 1;

  // One backward pass, checkpointing every spacing_ entries.
  const size_t state_size = segs_.size() + blocks_.size() + 16;
  spacing_ = std::max<size_t>(256, range_.size() * state_size * 48 / kCheckpointBudget + 1);
  auto snapshot_here = [&] {
    Checkpoint c;
    c.entry = at_;
    c.segs.assign(segs_.begin(), segs_.end());
    c.blocks.assign(blocks_.begin(), blocks_.end());
    checkpoints_.push_back(std::move(c));
  };
  snapshot_here();
  for (int64_t i = at_; i >= static_cast<int64_t>(range_.begin); --i) {
    undo(static_cast<uint32_t>(i));
    at_ = i - 1;
    if ((static_cast<size_t>(range_.end) - 1 - static_cast<size_t>(at_)) % spacing_ == 0 ||
        at_ == static_cast<int64_t>(range_.begin) - 1)
      snapshot_here();
  }
  std::reverse(checkpoints_.begin(), checkpoints_.end());
}

void AllocatorReplay::apply(uint32_t i) {
  const TraceEntry& e = snap_.trace[i];
  switch (e.action) {
    case Action::alloc: blocks_[e.addr] = Blk{e.size, BlockState::active_allocated, i, e.stack}; break;
    case Action::free_requested:
      if (auto it = blocks_.find(e.addr); it != blocks_.end()) it->second.state = BlockState::active_pending_free;
      else ++anomalies_;
      break;
    case Action::free_completed:
      if (!blocks_.erase(e.addr)) ++anomalies_;
      break;
    case Action::segment_alloc:
    case Action::segment_map: segs_[e.addr] = Seg{e.size, e.stream}; break;
    case Action::segment_free:
    case Action::segment_unmap:
      if (!segs_.erase(e.addr)) ++anomalies_;
      break;
    default: break;
  }
}

void AllocatorReplay::undo(uint32_t i) {
  const TraceEntry& e = snap_.trace[i];
  const uint32_t partner = partner_[i - range_.begin];
  switch (e.action) {
    case Action::alloc:
      if (!blocks_.erase(e.addr)) ++anomalies_;
      break;
    case Action::free_requested:
      if (auto it = blocks_.find(e.addr); it != blocks_.end()) it->second.state = BlockState::active_allocated;
      else ++anomalies_;
      break;
    case Action::free_completed: {
      const StackId stack = partner != UINT32_MAX ? snap_.trace[partner].stack : e.stack;
      blocks_[e.addr] = Blk{e.size, BlockState::active_pending_free, partner, stack};
      break;
    }
    case Action::segment_alloc:
    case Action::segment_map:
      if (!segs_.erase(e.addr)) ++anomalies_;
      break;
    case Action::segment_free:
    case Action::segment_unmap: segs_[e.addr] = Seg{e.size, e.stream}; break;
    default: break;
  }
}

void AllocatorReplay::load(const Checkpoint& c) {
  segs_ = std::map<uint64_t, Seg>(c.segs.begin(), c.segs.end());
  blocks_ = std::map<uint64_t, Blk>(c.blocks.begin(), c.blocks.end());
  at_ = c.entry;
}

AllocatorState AllocatorReplay::state_after(int64_t entry) {
  entry = std::clamp<int64_t>(entry, int64_t(range_.begin) - 1, int64_t(range_.end) - 1);
  // Nearest checkpoint, unless the current state is at least as close.
  auto it = std::lower_bound(checkpoints_.begin(), checkpoints_.end(), entry,
                             [](const Checkpoint& c, int64_t e) { return c.entry < e; });
  const Checkpoint* best = nullptr;
  int64_t best_distance = std::abs(at_ - entry);
  for (auto cand : {it, it == checkpoints_.begin() ? it : it - 1}) {
    if (cand == checkpoints_.end()) continue;
    const int64_t d = std::abs(cand->entry - entry);
    if (d < best_distance) best_distance = d, best = &*cand;
  }
  if (best) load(*best);
  last_steps_ = 0;
  const size_t anomalies = anomalies_;  // counted once, on the construction pass
  while (at_ < entry) apply(static_cast<uint32_t>(++at_)), ++last_steps_;
  while (at_ > entry) undo(static_cast<uint32_t>(at_--)), ++last_steps_;
  anomalies_ = anomalies;

  AllocatorState state;
  state.entry = entry;
  auto blk = blocks_.begin();
  for (const auto& [addr, seg] : segs_) {
    StateSegment s{addr, seg.size, seg.stream, {}};
    const uint64_t end = addr + seg.size;
    blk = blocks_.lower_bound(addr);
    uint64_t cursor = addr;
    auto gap = [&](uint64_t to) {
      if (to <= cursor) return;
      s.blocks.push_back(StateBlock{cursor, to - cursor, BlockState::inactive, UINT32_MAX, 0});
      state.inactive_bytes += to - cursor;
      state.largest_free_block = std::max(state.largest_free_block, to - cursor);
    };
    for (; blk != blocks_.end() && blk->first < end; ++blk) {
      gap(blk->first);
      const Blk& b = blk->second;
      const uint64_t size = std::min(b.size, end - blk->first);
      s.blocks.push_back(StateBlock{blk->first, size, b.state, b.alloc_entry, b.stack});
      if (b.state == BlockState::active_allocated) state.allocated_bytes += size;
      state.active_bytes += size;
      cursor = std::max(cursor, blk->first + size);
    }
    gap(end);
    state.reserved_bytes += seg.size;
    state.segments.push_back(std::move(s));
  }
  if (state.inactive_bytes > 0)
    state.external_fragmentation_ratio = 1.0 - double(state.largest_free_block) / double(state.inactive_bytes);
  return state;
}

}  // namespace cudascope::analysis
