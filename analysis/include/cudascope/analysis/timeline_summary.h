#pragma once
// What happened in a time range of a trace (the viewer's shift-drag selection): kernels by
// name, NVTX ranges and annotations by name, and how busy each GPU stream was.
//
// An event counts when it overlaps the range; totals are its whole duration (as Perfetto's
// area selection reports slices), busy time is the union of kernels, copies and memsets on
// the stream clipped to the range. UI-free; a pure function of the model and the index.

#include <cudascope/analysis/timeline_index.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct RangeNameStat {
  std::string name;
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
};

struct RangeStreamStat {
  std::uint32_t row = 0;       // the TimelineIndex row of the stream
  std::string label;           // "GPU 0 / stream 7"
  std::uint64_t events = 0;    // kernels, copies and memsets overlapping the range
  std::int64_t busy_ns = 0;    // union of their intervals, clipped to the range
  double busy_fraction = 0;    // busy_ns / range length
};

struct RangeSummary {
  std::int64_t t0 = 0, t1 = 0;
  std::vector<RangeNameStat> kernels;  // by total time, largest first
  std::vector<RangeNameStat> ranges;   // NVTX ranges and user annotations (CPU side; not marks), by total
  std::vector<RangeStreamStat> streams;  // GPU streams with work in the range, in row order
};

RangeSummary summarize_range(const TraceModel& model, const TimelineIndex& index, std::int64_t t0, std::int64_t t1);

}  // namespace cudascope::analysis
