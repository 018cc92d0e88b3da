#pragma once
// Several rank traces as one timeline, and the clock alignment that puts them on one clock.
//
// `cudascope-viewer trace_0.json.gz trace_1.json.gz` (or `cudascope view trace_*.json.gz`)
// opens traces that carry `distributedInfo` (ours and torch.profiler's Kineto traces both
// do) as ONE timeline: rank_sets() picks, among the traces opened together, those of one
// format with distinct ranks; merge_rank_traces() merges each such set into one TraceModel
// in which every rank's processes (host pids and GPUs) sit together, ordered by rank, and
// the document (TraceDocument::rankGroups()) says which rank each process belongs to, so
// the timeline draws a "rank N (host)" group header above them. Traces without a rank,
// with a rank another trace of the same format already has (a trace beside torch.profiler's
// of the same rank), or opened alone keep today's behaviour: one tab each.
//
// Clocks: the analysis library's plan (clock_alignment.h, the rule `cudascope stats` reports
// too). When every trace names the same host in distributedInfo (or none names one), the
// timestamps are used as they are: one clock. Otherwise every rank is aligned to the lowest
// rank on the ends of collectives paired by communicator and sequence number where the traces
// name them (torch.profiler's), else by order: offset = median of (reference end - rank end),
// error = median absolute deviation, widened to the offsets under which the paired parts
// overlap in time (clock_alignment.h). A rank that shares no group with the reference (rank 3
// of tensor-parallel pairs {2,3} and data-parallel pairs {1,3}) is aligned through a lower
// rank it shares one with, and the errors add up. A rank on the reference's own host keeps
// offset 0; a rank without collectives is shown as recorded and says so. The group header
// reads "rank N aligned to rank 0: offset X us ± Y us (K collectives paired by
// communicator and sequence number)", then the rank's communicators.
//
// The merged timeline is a snapshot of the files as read (a document whose rank files are
// still being written merges them again as they grow: TraceDocument's follow mode), built
// by writing the events (pids made unique per rank, flow/async ids per rank, times
// shifted by the offset) as trace JSON and reading that back with the analysis library's
// loader, so every view of a single trace (index, search, details, summaries) works on it
// unchanged. Memory while merging: the sources, the text and the merged model.
//
// UI-free (QtCore only); pure functions, callable from any thread.

#include <cudascope/analysis/clock_alignment.h>
#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/trace_model.h>

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::gui {

// One rank of a merged timeline.
struct RankGroup {
  int rank = -1;
  std::string host;        // distributedInfo's host ("" when the trace does not say)
  QString path;            // the file it came from
  using Clock = analysis::RankClock::Clock;
  Clock clock = Clock::one_clock;
  analysis::ClockAlignment alignment;  // Clock::aligned: what was applied
  int reference_rank = -1;   // the rank the clocks are aligned to
  // How the merged timeline pairs collectives across ranks (one rule for all ranks), and this
  // rank's communicators: "1 (tp [0, 1])"; "" for communication kernels of no named group.
  analysis::CollectivePairing pairing = analysis::CollectivePairing::order;
  QStringList communicators;
  QString label() const;     // "rank 1 (host-b)"
  // "rank 1 aligned to rank 0: offset 12.500 us ± 0.250 us (8 collectives paired by order)", ...
  QString clockText() const;
  // "collectives paired by communicator and sequence number: 1 (tp [0, 1]), 3 (dp [0, 2])";
  // "collectives paired by order (the traces do not all name their process groups)"; "" without
  // collectives.
  QString pairingText() const;
  // What the rank's header shows: clockText(), then pairingText() (an aligned rank's clock
  // text names the rule: then only its communicators).
  QString headerText() const;
};

// Of traces opened together, the sets that become one timeline each: indices into `models`
// of traces of one format with a rank (>= 0), when at least two of that format have ranks
// and no rank repeats among them. Each set is ordered by rank.
std::vector<std::vector<std::size_t>> rank_sets(const std::vector<const analysis::TraceModel*>& models);

struct RankSource {
  QString path;
  const analysis::TraceModel* model = nullptr;
};
struct MergedRankTimeline {
  std::unique_ptr<analysis::TraceModel> model;  // null on error
  std::vector<RankGroup> groups;                // by rank
  std::vector<int> process_group;               // per process of `model`: index into groups
  bool one_clock = true;                        // all on one host: times as recorded
  std::string error;
};
// Decides each rank's clock (one host: as recorded; else aligned to the lowest rank).
std::vector<RankGroup> plan_clocks(const std::vector<RankSource>& sources);
// Merges the sources (any order; sorted by rank) into one timeline.
MergedRankTimeline merge_rank_traces(std::vector<RankSource> sources);

}  // namespace cudascope::gui
