#pragma once
// `cudascope stats` of several ranks: each input (a trace, or a rank summary written by
// --summary-out) becomes a rank summary, one at a time, so memory holds one trace at most;
// then the per-rank and across-rank tables (analysis/rank_merge.h).

#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_stats.h>

#include <string>
#include <vector>

namespace cudascope::cli {

struct RankStatsOptions {
  std::vector<std::string> inputs;
  analysis::StatsFormat format = analysis::StatsFormat::table;
  analysis::RankSummaryOptions summary;
  bool check = false;  // also check each trace against the trace format's rules
};

// Prints the tables; returns the exit code (1 when --check found violations). Throws
// std::runtime_error naming the input that could not be read.
int print_rank_stats(const RankStatsOptions& options);

// Summarises one trace into `summary_path` (a file to gather with the other ranks' later).
void write_rank_summary_of(const std::string& trace, const std::string& summary_path,
                           const analysis::RankSummaryOptions& options);

}  // namespace cudascope::cli
