#pragma once
// `cudascope stats`: the figures nsys stats gives, from a trace read back.
//   - per kernel name: count, total, average, min, max, share of all kernel time;
//   - per NVTX range name: count, total, average, min, max;
//   - copies by kind: count, bytes, time; fills likewise;
//   - records dropped while recording (buffer, CUPTI), and whether the trace is complete.

#include <cudascope/analysis/trace_reader.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct DurationStat {
  std::string name;
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  double average_ns() const noexcept { return count == 0 ? 0.0 : static_cast<double>(total_ns) / static_cast<double>(count); }
};

struct CopyStat {
  std::string kind;  // "HtoD", ..., "Memset"
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  std::int64_t total_ns = 0;
};

struct TraceStats {
  std::vector<DurationStat> kernels;  // by total time, largest first
  std::int64_t kernel_total_ns = 0;
  std::vector<DurationStat> ranges;   // NVTX, by total time
  std::vector<CopyStat> copies;       // by kind name
  std::int64_t events = 0;
  std::int64_t dropped_buffer = 0;
  std::int64_t dropped_cupti = 0;
  bool complete = false;
};

TraceStats compute_stats(const Trace& trace);
// Tables as text (aligned columns), or CSV: one header line then rows, a "section" column first.
std::string format_stats(const TraceStats& stats, bool csv);

// The Chrome trace format's structural rules Perfetto relies on, checked on a trace read
// back: field types (from reading), "B"/"E" balanced per (pid, tid) with matching names,
// "b"/"e" paired by id, each flow id with exactly one "s" and one "f", the "s" not after the
// "f". A trace cut short may leave ranges open. Returns the violations, empty when none.
std::vector<std::string> validate_trace(const Trace& trace);

}  // namespace cudascope::analysis
