#pragma once
// `cudascope stats` of several ranks: each input (a trace, or a rank summary written by
// --summary-out) becomes a rank summary, one at a time, so memory holds one trace at most;
// then the per-rank and across-rank tables (analysis/rank_merge.h). Also what every stats path
// (one trace, ranks, --summary-out) says of a trace it read, so they say it alike.

#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_stats.h>

#include <cudascope/util/byte_source.h>

#include <memory>
#include <string>
#include <vector>

namespace cudascope::cli {

// What a user must know of how a trace was read, on stderr as "PATH: ...": the loader's notes
// when stdout does not show them (`notes_on_stdout` false: CSV, JSON, rank tables, summaries),
// and in any case that a trace cut short was read only up to where its file ends, since the
// figures then cover part of the recording and a "Note:" among the tables is easily missed.
void warn_of_trace_notes(const std::string& path, const analysis::TraceModel& model, bool notes_on_stdout);

// `stats --check` of one trace: the format's rules (analysis::validate_trace) and a file that
// holds the whole trace (one cut short is no JSON document; the loader only reads up to its
// last complete event). Empty when it passes.
std::vector<std::string> check_trace(const analysis::TraceModel& model);

// Opens a stats input once (a trace or a rank summary, plain or gzip): its head tells which
// it is and the reader then takes the same stream, so pipes work. Throws std::runtime_error
// naming the path when it cannot be opened.
std::unique_ptr<util::PeekedInput> open_stats_input(const std::string& path);

struct RankStatsOptions {
  std::vector<std::string> inputs;
  // inputs.front() when the caller has opened it already (to tell a summary from a trace);
  // the others are opened one at a time as they are read.
  std::shared_ptr<util::PeekedInput> first_input;
  analysis::StatsFormat format = analysis::StatsFormat::table;
  analysis::RankSummaryOptions summary;
  bool check = false;  // also check each trace against the trace format's rules
};

// Prints the tables; returns the exit code (1 when --check found violations). Throws
// std::runtime_error naming the input that could not be read.
int print_rank_stats(const RankStatsOptions& options);

// Summarises one trace into `summary_path` (a file to gather with the other ranks' later).
void write_rank_summary_of(util::PeekedInput& trace, const std::string& summary_path,
                           const analysis::RankSummaryOptions& options);

}  // namespace cudascope::cli
