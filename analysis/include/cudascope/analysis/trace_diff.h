#pragma once
// `cudascope diff` on two traces (any the trace loader reads: ours, Kineto, Chrome): kernel
// time by name, NVTX range time by name and copies by kind, from each trace's stats
// (trace_stats.h), side by side with a noise estimate.
//
// Noise: a name's total is a sum of instances whose durations scatter. With n instances of
// sample standard deviation s (n - 1 in the denominator), the total's standard error is
// sqrt(n) * s, and the difference of two totals has
//     noise = sqrt(n_A * s_A^2 + n_B * s_B^2)
// (the counts taken as given: a change in how often a kernel runs is not noise). A side with
// a single instance borrows the other side's s; with one instance on each side there is no
// estimate (NaN). A change counts as within noise when |B - A| <= 2 * noise (about 95% when
// the instances are independent). Totals over names (all kernels, all copies) add the
// variances of their names.

#include <cudascope/analysis/trace_stats.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cudascope::analysis {

// Changes within this many standard errors are flagged as within noise.
inline constexpr double kNoiseSigmas = 2.0;

struct TimeDiffRow {
  std::string name;
  std::int64_t count_a = 0, count_b = 0;
  std::int64_t total_a_ns = 0, total_b_ns = 0;
  double noise_ns = std::numeric_limits<double>::quiet_NaN();  // standard error of B - A; NaN: none

  std::int64_t delta_ns() const noexcept { return total_b_ns - total_a_ns; }
  // Percent change from A: +inf when A is 0 and B is not, 0 when both are 0.
  double delta_percent() const noexcept;
  bool has_noise() const noexcept { return !std::isnan(noise_ns); }
  bool within_noise() const noexcept {
    return has_noise() && std::fabs(static_cast<double>(delta_ns())) <= kNoiseSigmas * noise_ns;
  }
};

struct CopyDiffRow : TimeDiffRow {  // name: the kind ("HtoD", ..., "Memset")
  std::int64_t bytes_a = 0, bytes_b = 0;
  std::int64_t delta_bytes() const noexcept { return bytes_b - bytes_a; }
};

struct TraceDiff {
  std::vector<TimeDiffRow> kernels;  // by name, largest |change| first (then by name)
  std::vector<TimeDiffRow> ranges;   // NVTX ranges and user annotations, same order
  std::vector<CopyDiffRow> copies;   // by kind name
  TimeDiffRow kernel_total;          // "all kernels"
  CopyDiffRow copy_total;            // "all copies"
  std::string format_a, format_b;    // "cudascope", "kineto", "chrome"
  std::vector<std::string> notes;    // the loaders' notes, prefixed "A: " / "B: "
};

// Pure function of the two stats; safe to call from any thread.
TraceDiff diff_traces(const TraceStats& a, const TraceStats& b);

// Percent change from a to b with delta_percent()'s conventions.
double percent_change(double a, double b) noexcept;

}  // namespace cudascope::analysis
