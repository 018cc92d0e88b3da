#include <cudascope/analysis/compare.h>

#include <algorithm>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

// Blocks often carry no stack of their own (history recorded without block frames); the
// alloc entry that created the block's current occupant then supplies one.
std::unordered_map<uint64_t, StackId> last_alloc_stacks(const Snapshot& s) {
  std::unordered_map<uint64_t, StackId> stacks;
  for (const TraceEntry& e : s.trace)
    if (e.action == Action::alloc) stacks[(uint64_t(uint16_t(e.device)) << 48) ^ e.addr] = e.stack;
  return stacks;
}

}  // namespace

std::string group_key(const FrameIndex& frames, StackId stack, GroupBy group) {
  const auto frame = group == GroupBy::user_frame ? frames.user_frame(stack) : frames.top_frame(stack);
  return frame ? frames.snapshot().frame_text(*frame) : std::string("<no stack recorded>");
}

std::string group_key(const Snapshot& s, StackId stack, GroupBy group) { return group_key(FrameIndex(s), stack, group); }

Comparison compare_snapshots(const Snapshot& a, const Snapshot& b, GroupBy group) {
  Comparison out;
  std::unordered_map<std::string, size_t> index;
  auto add = [&](const Snapshot& s, bool is_b) {
    const auto fallback = last_alloc_stacks(s);
    const FrameIndex frames(s);
    for (const Block& blk : s.blocks) {
      if (blk.state == BlockState::inactive) continue;
      StackId stack = blk.stack;
      if (!frames.top_frame(stack)) {
        const auto& seg = s.segments[blk.segment];
        if (auto it = fallback.find((uint64_t(uint16_t(seg.device)) << 48) ^ blk.address); it != fallback.end())
          stack = it->second;
      }
      std::string key = group_key(frames, stack, group);
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
