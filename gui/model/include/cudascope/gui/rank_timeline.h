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
// Clocks. When every trace names the same host in distributedInfo (or none names one),
// the timestamps are used as they are: one clock. Otherwise every rank is aligned to the
// lowest rank (rank 0) on the ends of matching collectives: the k-th communication kernel
// (NCCL's: a kernel named "nccl...", or with args "communication": true) of a rank is
// paired with the reference's k-th, the offset is the median of (reference end - rank end)
// and its estimated error the median absolute deviation of those differences (the spread,
// max - min, is kept too). A collective cannot end on one rank before the last rank has
// contributed, so the ends agree to within the last chunk's transfer (docs/ranks.md). A
// rank on the reference's own host keeps offset 0; a rank without collectives is shown
// as recorded and says so. The group header and the page's status line read
// "rank N aligned to rank 0: offset X us ± Y us (K collectives)".
//
// The merged timeline is a snapshot of the files at load time (it is not followed), built
// by writing the events (pids made unique per rank, flow/async ids per rank, times
// shifted by the offset) as trace JSON and reading that back with the analysis library's
// loader, so every view of a single trace (index, search, details, summaries) works on it
// unchanged. Memory while merging: the sources, the text and the merged model.
//
// UI-free (QtCore only); pure functions, callable from any thread.

#include <cudascope/analysis/trace_model.h>

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::gui {

// The end times (ns, the trace's own clock) of the communication kernels
// (analysis::is_communication_kernel_event, the rule the rank summaries use), in start order.
std::vector<std::int64_t> collective_ends(const analysis::TraceModel& model);

// One rank's clock relative to the reference rank's.
struct ClockAlignment {
  int collectives = 0;   // pairs used (the shorter of the two lists)
  std::int64_t offset_ns = 0;  // add to this rank's times to put them on the reference's clock
  std::int64_t error_ns = 0;   // median absolute deviation of the paired differences
  std::int64_t spread_ns = 0;  // max - min of the paired differences
  bool counts_differ = false;  // the two ranks ran different numbers of communication kernels
};
// Pairs the k-th end of `ends` with the k-th of `reference_ends`; no pairs: all zero.
ClockAlignment align_on_collectives(const std::vector<std::int64_t>& reference_ends, const std::vector<std::int64_t>& ends);

// True when every non-empty host name is the same one (absent names count as that host).
bool one_host(const std::vector<std::string>& hosts);

// One rank of a merged timeline.
struct RankGroup {
  int rank = -1;
  std::string host;        // distributedInfo's host ("" when the trace does not say)
  QString path;            // the file it came from
  enum class Clock { reference, one_clock, aligned, unaligned } clock = Clock::one_clock;
  ClockAlignment alignment;  // Clock::aligned: what was applied
  int reference_rank = -1;   // the rank the clocks are aligned to
  QString label() const;     // "rank 1 (host-b)"
  QString clockText() const; // "rank 1 aligned to rank 0: offset 12.500 us ± 0.250 us (8 collectives)", ...
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
