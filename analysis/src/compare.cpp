#include <cudascope/analysis/compare.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace cudascope::analysis {
namespace {

constexpr uint32_t kNoEntry = UINT32_MAX;

uint64_t device_address(int device, uint64_t address) { return (uint64_t(uint16_t(device)) << 48) ^ address; }

// The alloc entry that created each block's current occupant (the last alloc at its address).
// Blocks often carry no stack of their own (history recorded without block frames); that entry
// then supplies one, and it carries the NVTX context and the time.
std::unordered_map<uint64_t, uint32_t> last_alloc_entries(const Snapshot& s) {
  std::unordered_map<uint64_t, uint32_t> entries;
  for (uint32_t i = 0; i < s.trace.size(); ++i) {
    const TraceEntry& e = s.trace[i];
    if (e.action == Action::alloc) entries[device_address(e.device, e.addr)] = i;
  }
  return entries;
}

// PyTorch's external_annotations as intervals per device (START/END paired by name, innermost
// first), for the innermost range open at a time.
class AnnotationIndex {
 public:
  explicit AnnotationIndex(const Snapshot& s) : snapshot_(s) {
    std::map<std::pair<int, StringId>, std::vector<int64_t>> open;
    for (const Annotation& a : s.annotations) {
      const std::string_view stage = s.str(a.stage);
      auto& starts = open[{a.device, a.name}];
      if (stage == "START") {
        starts.push_back(a.time_us);
      } else if (stage == "END" && !starts.empty()) {
        intervals_.push_back({a.device, starts.back(), a.time_us, a.name});
        starts.pop_back();
      }
    }
    // Still open at the end of the snapshot: open until then.
    for (const auto& [key, starts] : open)
      for (int64_t start : starts) intervals_.push_back({key.first, start, INT64_MAX, key.second});
    std::sort(intervals_.begin(), intervals_.end(), [](const Interval& x, const Interval& y) {
      return std::tie(x.device, x.begin, x.end) < std::tie(y.device, y.begin, y.end);
    });
  }

  // The innermost (latest begun) range of `device` open at `time`, or none.
  std::optional<std::string_view> at(int device, int64_t time) const {
    auto it = std::upper_bound(intervals_.begin(), intervals_.end(), std::make_pair(device, time),
                               [](const std::pair<int, int64_t>& key, const Interval& x) {
                                 return std::tie(key.first, key.second) < std::tie(x.device, x.begin);
                               });
    while (it != intervals_.begin()) {
      --it;
      if (it->device != device) break;
      if (time <= it->end) return snapshot_.str(it->name);
    }
    return std::nullopt;
  }

 private:
  struct Interval {
    int device;
    int64_t begin, end;
    StringId name;
  };
  const Snapshot& snapshot_;
  std::vector<Interval> intervals_;
};

std::string nvtx_key(const Snapshot& s, const AnnotationIndex& annotations, const TraceEntry& e) {
  if (e.user_metadata) return std::string(s.str(e.user_metadata));
  if (s.has_times)
    if (auto range = annotations.at(e.device, e.time_us)) return std::string(*range);
  return "<no NVTX range>";
}

}  // namespace

std::string group_key(const FrameIndex& frames, StackId stack, GroupBy group) {
  const auto frame = group == GroupBy::user_frame ? frames.user_frame(stack) : frames.top_frame(stack);
  return frame ? frames.snapshot().frame_text(*frame) : std::string("<no stack recorded>");
}

std::string group_key(const Snapshot& s, StackId stack, GroupBy group) { return group_key(FrameIndex(s), stack, group); }

std::string nvtx_range_key(const Snapshot& s, const TraceEntry& entry) { return nvtx_key(s, AnnotationIndex(s), entry); }

Comparison compare_snapshots(const Snapshot& a, const Snapshot& b, GroupBy group) {
  Comparison out;
  std::unordered_map<std::string, size_t> index;
  auto add = [&](const Snapshot& s, bool is_b) {
    const auto alloc_entries = last_alloc_entries(s);
    const FrameIndex frames(s);
    const std::optional<AnnotationIndex> annotations =
        group == GroupBy::nvtx_range ? std::optional<AnnotationIndex>(std::in_place, s) : std::nullopt;
    for (const Block& blk : s.blocks) {
      if (blk.state == BlockState::inactive) continue;
      const auto found = alloc_entries.find(device_address(s.segments[blk.segment].device, blk.address));
      const uint32_t entry = found == alloc_entries.end() ? kNoEntry : found->second;
      std::string key;
      if (group == GroupBy::nvtx_range) {
        key = entry == kNoEntry ? "<allocated before the trace>" : nvtx_key(s, *annotations, s.trace[entry]);
      } else {
        const StackId stack = !frames.top_frame(blk.stack) && entry != kNoEntry ? s.trace[entry].stack : blk.stack;
        key = group_key(frames, stack, group);
      }
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
