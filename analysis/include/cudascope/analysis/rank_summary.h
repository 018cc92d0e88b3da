#pragma once
// A rank's trace reduced to what a comparison of ranks needs: its steps and, per step, how the
// GPU spent the time (compute kernels, communication kernels, copies, idle) and how much
// communication nothing hid. Small (a few hundred bytes a step) and written as JSON, so it
// can be computed where the trace is written and merged with the other ranks' later
// (rank_merge.h) without any machine reading every trace.
//
// Definitions, per device of the trace, over a step's time span [start, end):
//   busy           the union of all device activity (kernels, copies, fills) on any stream
//   compute        the union of kernels that are not communication
//   communication  the union of communication kernels (is_communication_kernel_event:
//                  NCCL's by name, util/communication_kernel.h, or "communication":true in
//                  their args)
//   exposed        communication minus compute: the time a collective ran while no compute
//                  kernel ran on any stream of the device (the part overlap did not hide)
//   copy           the union of copies and fills
//   idle           the step's length minus busy
// With several devices in one trace the figures are summed over the devices.
//
// Steps: slices named "ProfilerStep#N" (torch.profiler's schedule) when the trace has any;
// else NVTX ranges and annotations whose name is a step name ("step", "step 3", "train_step",
// "training step #4", "iteration 7", case-insensitive), or the ranges whose name starts with
// an explicit prefix (RankSummaryOptions::step_prefix). Nested step slices count once
// (the outermost); a step overlapping the previous one's end is a step of its own. Without
// steps, the summary has only the whole-trace figures.
// A step is the host-side span of its range; the device work it launched is counted where
// it ran within that span (as Holistic Trace Analysis does).
//
// Thread-safety: free functions, no shared state.

#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::util {
class PeekedInput;
}

namespace cudascope::analysis {

struct StepTimes {
  std::string name;                          // the step's range name; "all" for the whole trace
  std::int64_t start_ns = 0;                 // the trace's clock
  std::int64_t end_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t communication_ns = 0;
  std::int64_t exposed_communication_ns = 0;
  std::int64_t copy_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t duration_ns() const noexcept { return end_ns - start_ns; }
};

struct RankSummary {
  static constexpr int kVersion = 1;
  std::string file;          // the trace it was computed from, as given
  std::string format;        // "cudascope", "kineto", "chrome"
  int rank = -1;             // distributedInfo; -1 when the trace has none
  int local_rank = -1;
  int world_size = -1;
  std::string host;
  std::string backend;       // distributedInfo's backend
  std::vector<int> devices;  // the GPUs with device activity
  std::string step_rule;     // how steps were found: "ProfilerStep", "step names", "prefix 'X'", "none"
  std::int64_t communication_kernels = 0;
  std::int64_t kernels = 0;
  StepTimes total;           // "all": from the first to the last device activity
  std::vector<StepTimes> steps;  // in time order
  // The communication kernels by communicator (collective_pairing.h), so the merge can pair
  // each collective across ranks: three numbers a collective.
  std::vector<CommunicatorCollectives> communicators;
};

struct RankSummaryOptions {
  std::string step_prefix;  // non-empty: steps are the ranges whose name starts with this
};

// One pass over the model's events, then per-device interval unions.
RankSummary summarize_rank(const TraceModel& model, const std::string& file, const RankSummaryOptions& options = {});

// Whether an event is a communication kernel: a kernel slice (cat "kernel", any case, as
// Kineto's versions write it) that is NCCL's by name (util/communication_kernel.h, for traces
// without our mark) or carries "communication":true in its args. The one rule the summaries
// and the viewer's clock alignment share.
bool is_communication_kernel_event(const TraceModel& model, const TraceModel::Event& e);

// JSON, one object whose first member is "cudascopeRankSummary" (the format version), which is
// how rank_summary_file() tells it from a trace.
std::string rank_summary_json(const RankSummary& summary);

struct RankSummaryReadResult {
  RankSummary summary;
  std::string error;  // empty on success; else names the file and what was wrong
  bool ok() const noexcept { return error.empty(); }
};
// Reads what rank_summary_json wrote (plain or gzip); `origin` names it in errors.
RankSummaryReadResult parse_rank_summary(const std::string& text, const std::string& origin);
RankSummaryReadResult read_rank_summary(const std::string& path);
// The same from an input opened once (util::PeekedInput), e.g. after is_rank_summary().
RankSummaryReadResult read_rank_summary(util::PeekedInput& input);
// True when `path` (plain or gzip) starts with a rank summary's first member, not a trace.
bool is_rank_summary_file(const std::string& path);
// The same test on an input opened once: it looks at its head only, so the input can be
// read next by read_rank_summary() or load_trace() (a pipe is opened and read once).
bool is_rank_summary(util::PeekedInput& input);

// Writes rank_summary_json(summary) to `path` (gzip when it ends in ".gz"). Returns an empty
// string on success, else the problem naming the path.
std::string write_rank_summary(const RankSummary& summary, const std::string& path);

// The summary written beside a trace (by the injection library, at exit): in the trace's
// directory, "summary_" and the trace's file name with its ".json" or ".json.gz" ending
// made ".json": "run/trace_3.json.gz" -> "run/summary_trace_3.json",
// "trace_0.1234.json" -> "summary_trace_0.1234.json". A prefix rather than a suffix, so a
// glob of the traces (trace_*.json) never picks up their summaries.
std::string rank_summary_path_for_trace(const std::string& trace_path);

// Whether a step-name rule matches (exposed for tests): "ProfilerStep#3" is not among these
// (it has a rule of its own); "step", "Step 3", "train_step", "training step #4",
// "iteration 7" are.
bool is_step_name(std::string_view name);

}  // namespace cudascope::analysis
