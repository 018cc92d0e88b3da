#pragma once
// `cudascope stats`: the figures nsys stats gives, from any trace the loader reads (ours,
// torch.profiler/Kineto, Chrome), the same tables for each:
//   - per kernel name: count, total, average, min, max, share of all kernel time;
//   - memory operations by kind (HtoD, DtoH, DtoD, ..., Memset): count, bytes, time;
//   - NVTX ranges and user annotations (Kineto's user_annotation) by name;
//   - GPU-side annotations (Kineto's gpu_user_annotation), CPU ops (cpu_op) and CUDA API
//     calls (cuda_runtime, cuda_driver) by name; slices of other categories by name;
//   - records dropped while recording (buffer, CUPTI), and whether the trace is complete.

#include <cudascope/analysis/trace_model.h>
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
  double sum_squares_ns2 = 0;  // sum of each instance's duration squared, for the spread (trace_diff.h)
  double average_ns() const noexcept { return count == 0 ? 0.0 : static_cast<double>(total_ns) / static_cast<double>(count); }
};

struct CopyStat {
  std::string kind;  // "HtoD", ..., "Memset"
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  std::int64_t total_ns = 0;
  double sum_squares_ns2 = 0;  // sum of each operation's duration squared
};

struct TraceStats {
  std::vector<DurationStat> kernels;  // by total time, largest first (then by name)
  std::int64_t kernel_total_ns = 0;
  std::vector<DurationStat> ranges;   // NVTX ranges and user annotations, by total time
  std::vector<CopyStat> copies;       // by kind name
  std::vector<DurationStat> gpu_annotations;  // by total time
  std::vector<DurationStat> cpu_ops;          // by total time
  std::vector<DurationStat> api_calls;        // CUDA runtime and driver calls, by total time
  // Slices of any other category (a plain Chrome trace's own, Kineto's "overhead"), by name.
  std::vector<DurationStat> other_slices;
  std::int64_t events = 0;
  std::int64_t dropped_buffer = 0;
  std::int64_t dropped_cupti = 0;
  bool complete = false;
  bool cut_short = false;
  std::string format;               // "cudascope", "kineto" or "chrome"
  std::vector<std::string> notes;   // the loader's notes (cut short, ...)
};

TraceStats compute_stats(const TraceModel& model);
TraceStats compute_stats(const Trace& trace);  // of trace.model

enum class StatsFormat { table, csv, json };
// Tables as text (aligned columns); CSV: one header line then rows, a "section" column
// first; JSON: one object with an array per table.
std::string format_stats(const TraceStats& stats, StatsFormat format);
std::string format_stats(const TraceStats& stats, bool csv);

// The Chrome trace format's structural rules Perfetto relies on, checked on a trace read
// back: field types (from reading; in our own traces "pid" and "tid" are integers), at
// least one event besides metadata, "B"/"E" balanced
// per (pid, tid) with matching names, "b"/"e" paired by id, each flow's "s" with exactly one
// "f" and not after it (a lone "s" or "f" counts only in our own traces: Kineto writes an
// "f" for every runtime call). A trace cut short may leave ranges open. Returns the
// violations, empty when none.
std::vector<std::string> validate_trace(const TraceModel& model);
std::vector<std::string> validate_trace(const Trace& trace);  // of trace.model

}  // namespace cudascope::analysis
