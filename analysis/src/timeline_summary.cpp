#include <cudascope/analysis/timeline_summary.h>

#include <cudascope/analysis/event_kind.h>

#include <algorithm>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

struct NameTable {
  std::unordered_map<std::uint32_t, std::size_t> at;
  std::vector<RangeNameStat> rows;
  void add(const TraceModel& model, const TraceModel::Event& e) {
    auto [it, inserted] = at.try_emplace(e.name, rows.size());
    if (inserted) rows.push_back(RangeNameStat{std::string(model.name(e)), 0, 0, e.dur_ns, e.dur_ns});
    RangeNameStat& r = rows[it->second];
    const std::int64_t d = std::max<std::int64_t>(e.dur_ns, 0);
    ++r.count;
    r.total_ns += d;
    r.min_ns = std::min(r.min_ns, d);
    r.max_ns = std::max(r.max_ns, d);
  }
  std::vector<RangeNameStat> sorted() && {
    std::sort(rows.begin(), rows.end(), [](const RangeNameStat& a, const RangeNameStat& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    return std::move(rows);
  }
};

}  // namespace

RangeSummary summarize_range(const TraceModel& model, const TimelineIndex& index, std::int64_t t0, std::int64_t t1) {
  RangeSummary out;
  out.t0 = std::min(t0, t1);
  out.t1 = std::max(t0, t1);
  NameTable kernels, ranges;
  // One pass per row and lane over the events overlapping the range: an item list at a
  // scale where nothing merges (1 ns per pixel, 0-pixel minimum) visits exactly those.
  std::vector<TimelineItem> items;
  const auto& rows = index.rows();
  for (std::uint32_t r = 0; r < rows.size(); ++r) {
    if (rows[r].kind != TimelineRow::Kind::slices) continue;
    items.clear();
    index.items(r, out.t0, out.t1, 1.0, items, 0.0);
    RangeStreamStat stream;
    stream.row = r;
    stream.label = model.process_label(rows[r].process) + " / " + rows[r].label;
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (const TimelineItem& item : items) {
      for (std::uint32_t k = 0; k < item.count; ++k) {
        const std::uint32_t id = item.count == 1 ? item.event : index.lane_event(r, item.depth, item.first + k);
        const auto& e = model.event(id);
        if (e.ts_ns > out.t1 || e.end_ns() < out.t0) continue;
        const EventKind kind = event_kind(model.cat(e), e.ph);
        if (kind == EventKind::kernel) kernels.add(model, e);
        if (kind == EventKind::nvtx && e.is_slice()) ranges.add(model, e);  // marks are not ranges
        if (rows[r].gpu && is_gpu_work(kind)) {
          ++stream.events;
          busy.emplace_back(std::max(e.ts_ns, out.t0), std::min(e.end_ns(), out.t1));
        }
      }
    }
    if (stream.events == 0) continue;
    std::sort(busy.begin(), busy.end());
    std::int64_t covered = 0, open = busy.front().first, close = busy.front().first;
    for (const auto& [a, b] : busy) {
      if (a > close) covered += close - open, open = a, close = b;
      else close = std::max(close, b);
    }
    covered += close - open;
    stream.busy_ns = covered;
    stream.busy_fraction = out.t1 > out.t0 ? double(covered) / double(out.t1 - out.t0) : 0.0;
    out.streams.push_back(std::move(stream));
  }
  out.kernels = std::move(kernels).sorted();
  out.ranges = std::move(ranges).sorted();
  return out;
}

}  // namespace cudascope::analysis
