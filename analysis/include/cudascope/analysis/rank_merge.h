#pragma once
// Several ranks' summaries (rank_summary.h) side by side: a table per rank (step time, how
// the GPU spent it, exposed communication) and a table across ranks per step (fastest,
// median and slowest rank, and by how much the slowest trailed). Works on summaries only, so
// the traces are read one at a time (or not at all, where the summaries were written beside
// them): memory is bounded by the largest single trace, not the sum.
//
// Steps are matched across ranks by name when every rank's step names are distinct
// ("ProfilerStep#12" on each rank), else by their order. Collectives are paired across ranks
// by communicator and sequence number where the traces name them, else by order
// (collective_pairing.h); the table of communicators says which.
//
// Clocks: when the ranks name more than one host, each rank's offset to the lowest rank's
// clock, its estimated error and the collectives it rests on (clock_alignment.h, the rule
// the viewer applies to a merged timeline), from the collectives' ends the summaries carry.
// The table and CSV show them only then; the JSON always carries "clocks" ("one_host": true
// when the times are used as recorded).
//
// Thread-safety: free functions, no shared state.

#include <cudascope/analysis/clock_alignment.h>
#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_stats.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct RankRow {
  std::string label;          // the rank ("3"), or the file when the trace names no rank
  int rank = -1;
  std::string host;
  std::string file;
  int steps = 0;
  std::int64_t step_mean_ns = 0;
  std::int64_t step_max_ns = 0;
  StepTimes sum;              // over the steps; the whole trace's figures when it has none
};

struct StepRow {
  std::string step;           // the step's name (matched by name) or "#N" (matched by order)
  int ranks = 0;              // ranks that have this step
  std::string fastest;        // rank labels
  std::string slowest;
  std::int64_t fastest_ns = 0;
  std::int64_t median_ns = 0;
  std::int64_t slowest_ns = 0;
  std::string most_exposed;   // the rank with the most exposed communication in the step
  std::int64_t most_exposed_ns = 0;
  std::int64_t over_median_ns() const noexcept { return slowest_ns - median_ns; }
  std::int64_t over_fastest_ns() const noexcept { return slowest_ns - fastest_ns; }
};

// One communicator's collectives across the ranks that ran them. A collective's kernel lasts
// from when its rank arrived until the last rank of the group did (and the transfer), so
// the longest minus the shortest kernel of one collective is how long the first to arrive
// waited, and the rank with the shortest kernel arrived last.
struct CommunicatorRow {
  std::string communicator;     // the process group's name; "all" under order pairing
  std::string description;      // "tp", "default_pg", ... ("" when not named)
  std::string members;          // the group's ranks as the traces name them ("[0, 1]"; "" unknown)
  std::string ranks;            // the inputs that ran its collectives, by label ("0 1"; runs of
                                // three or more as "0-34")
  int collectives = 0;          // paired on every one of those ranks
  int partial = 0;              // found on some of them only
  std::int64_t median_ns = 0;   // median over paired collectives of the longest kernel
  std::int64_t wait_median_ns = 0;  // median of longest - shortest kernel
  std::int64_t wait_max_ns = 0;
  std::string last_to_arrive;   // the rank most often with the shortest kernel
  int last_to_arrive_count = 0;
};

struct RankReport {
  std::vector<RankRow> ranks;   // by rank, then file
  std::vector<StepRow> steps;   // in step order
  CollectivePairing collective_pairing = CollectivePairing::order;
  std::vector<CommunicatorRow> communicators;  // by name; one "all" row under order pairing
  bool matched_by_name = true;
  ClockPlan clocks;             // the inputs with a rank, by rank (a rank given twice: its first input)
  std::map<std::string, int> slowest_counts;  // rank label -> steps in which it was slowest
  std::vector<std::string> notes;             // ranks with a different number of steps, ranks of the
                                              // world size with no input, ...
};

RankReport merge_rank_summaries(const std::vector<RankSummary>& summaries);

// Aligned tables, CSV (a "section" column first: rank or step) or one JSON object.
std::string format_rank_report(const RankReport& report, StatsFormat format);

}  // namespace cudascope::analysis
