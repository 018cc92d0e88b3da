#include <cudascope/analysis/compare.h>

#include <algorithm>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

bool library_frame(std::string_view filename) {
  return filename.empty() || filename.front() == '<' || filename.find("torch/") == 0 ||
         filename.find("/torch/") != std::string_view::npos || filename.find("site-packages") != std::string_view::npos ||
         filename.find("/lib/python") != std::string_view::npos;
}

// Blocks often carry no stack of their own (history recorded without block frames); the
// alloc entry that created the block's current occupant then supplies one.
std::unordered_map<uint64_t, StackId> last_alloc_stacks(const Snapshot& s) {
  std::unordered_map<uint64_t, StackId> stacks;
  for (const TraceEntry& e : s.trace)
    if (e.action == Action::alloc) stacks[(uint64_t(uint16_t(e.device)) << 48) ^ e.addr] = e.stack;
  return stacks;
}

}  // namespace

std::string group_key(const Snapshot& s, StackId stack, GroupBy group) {
  const auto frames = s.stack(stack);
  if (frames.empty()) return "<no stack recorded>";
  if (group == GroupBy::user_frame)
    for (FrameId f : frames)
      if (!library_frame(s.str(s.frames.get(f).filename))) return s.frame_text(f);
  return s.frame_text(frames.front());
}

Comparison compare_snapshots(const Snapshot& a, const Snapshot& b, GroupBy group) {
  Comparison out;
  std::unordered_map<std::string, size_t> index;
  auto add = [&](const Snapshot& s, bool is_b) {
    const auto fallback = last_alloc_stacks(s);
    for (const Block& blk : s.blocks) {
      if (blk.state == BlockState::inactive) continue;
      StackId stack = blk.stack;
      if (s.stack(stack).empty()) {
        const auto& seg = s.segments[blk.segment];
        if (auto it = fallback.find((uint64_t(uint16_t(seg.device)) << 48) ^ blk.address); it != fallback.end())
          stack = it->second;
      }
      std::string key = group_key(s, stack, group);
      auto [it, inserted] = index.try_emplace(std::move(key), out.rows.size());
      if (inserted) out.rows.push_back(CompareRow{it->first});
      CompareRow& row = out.rows[it->second];
      (is_b ? row.bytes_b : row.bytes_a) += blk.size;
      ++(is_b ? row.count_b : row.count_a);
      (is_b ? out.total_b : out.total_a) += blk.size;
    }
  };
  add(a, false);
  add(b, true);
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const CompareRow& x, const CompareRow& y) {
    if (x.delta() != y.delta()) return x.delta() > y.delta();
    return x.frame < y.frame;
  });
  return out;
}

}  // namespace cudascope::analysis
