#include <cudascope/analysis/figures.h>

#include <algorithm>
#include <utility>

namespace cudascope::analysis {
namespace {

// Walks a device's trace back from its final state: undoing each entry gives the state
// before it, so the peaks need no assumption about what happened before the trace began.
std::pair<int64_t, int64_t> device_peaks(const Snapshot& snap, int device) {
  int64_t reserved = 0, live = 0;
  for (const Segment& s : snap.segments) {
    if (s.device != device) continue;
    reserved += static_cast<int64_t>(s.total_size);
    for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b)
      if (snap.blocks[b].state != BlockState::inactive) live += static_cast<int64_t>(snap.blocks[b].requested_size);
  }
  int64_t peak_reserved = reserved, peak_live = live;
  const DeviceTrace range = snap.device_trace(device);
  for (uint32_t i = range.end; i-- > range.begin;) {
    const TraceEntry& e = snap.trace[i];
    const auto size = static_cast<int64_t>(e.size);
    switch (e.action) {
      case Action::alloc: live -= size; break;
      case Action::free_completed: live += size; break;
      case Action::segment_alloc:
      case Action::segment_map: reserved -= size; break;
      case Action::segment_free:
      case Action::segment_unmap: reserved += size; break;
      default: continue;
    }
    peak_reserved = std::max(peak_reserved, reserved);
    peak_live = std::max(peak_live, live);
  }
  return {peak_reserved, peak_live};
}

}  // namespace

Figures compute_figures(const Snapshot& snap) {
  Figures f;
  f.segments = snap.segments.size();
  f.blocks = snap.blocks.size();
  f.trace_entries = snap.trace.size();
  f.devices = snap.device_ids();
  std::vector<StreamFigures> per(snap.streams.size());
  for (size_t i = 0; i < per.size(); ++i) per[i].stream = snap.streams[i];
  for (const Segment& s : snap.segments) {
    f.reserved_bytes += s.total_size;
    f.allocated_bytes += s.allocated_size;
    f.active_bytes += s.active_size;
    f.requested_bytes += s.requested_size;
    StreamFigures& sf = per[s.stream];
    ++sf.segments;
    sf.blocks += s.block_count;
    sf.reserved_bytes += s.total_size;
    sf.allocated_bytes += s.allocated_size;
    sf.active_bytes += s.active_size;
    for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
      const Block& block = snap.blocks[b];
      if (block.state == BlockState::inactive) {
        f.inactive_bytes += block.size;
        sf.inactive_bytes += block.size;
        f.largest_free_block = std::max(f.largest_free_block, block.size);
        sf.largest_free_block = std::max(sf.largest_free_block, block.size);
      } else if (block.state == BlockState::active_allocated && block.size > block.requested_size) {
        f.internal_fragmentation_bytes += block.size - block.requested_size;
      }
    }
  }
  if (f.inactive_bytes > 0)
    f.external_fragmentation_ratio = 1.0 - double(f.largest_free_block) / double(f.inactive_bytes);
  for (const TraceEntry& e : snap.trace) {
    ++f.actions[static_cast<size_t>(e.action)];
    ++per[e.stream].trace_entries;
  }
  f.oom_entries = f.actions[static_cast<size_t>(Action::oom)];
  for (int device : f.devices) {
    const auto [reserved, allocated] = device_peaks(snap, device);
    f.peak_reserved_bytes += static_cast<uint64_t>(std::max<int64_t>(reserved, 0));
    f.peak_allocated_bytes += static_cast<uint64_t>(std::max<int64_t>(allocated, 0));
  }
  std::sort(per.begin(), per.end(), [](const auto& a, const auto& b) { return a.stream < b.stream; });
  f.streams = std::move(per);
  return f;
}

}  // namespace cudascope::analysis
