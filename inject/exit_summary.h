#pragma once
// A rank's summary (analysis/rank_summary.h) written beside its trace when the process ends,
// so `cudascope stats summary_*.json` merges a job's ranks without a second pass over the
// traces (docs/ranks.md).
//
// When: the process is a rank (RANK is set: summaries exist to be compared across ranks) and
// its trace was written whole and closed: at normal exit, SIGINT / SIGTERM, or the end of
// CUDASCOPE_DURATION (injection_agent.h). Not for a trace that stopped on a write error (the
// disk is likely full) nor for a process killed with SIGKILL: `cudascope stats` summarises
// those traces itself, up to their last complete event.
//
// How: the closed trace is read back with the analysis reader and summarised by the code
// `cudascope stats` runs, so the two agree figure for figure; a second implementation
// working on the live records would drift from it. The cost falls at exit: one read of the
// trace (about as long as `cudascope stats` of it) and, meanwhile, the memory of its model.
//
// Where: analysis::rank_summary_path_for_trace (trace_3.json.gz -> summary_trace_3.json).
// The file appears whole: util::write_file writes it under a hidden name beside it and
// renames it, so a process killed while writing it never leaves a summary `stats` would refuse.
//
// Linking: the analysis is a static archive inside libcudascope_inject.so, with its own
// instantiations of std::string and the rest; inject_exports.map exports the library's entry
// points only, so none of them serves or replaces the host program's (PyTorch's) copies.
//
// Thread-safety: free functions, no shared state.

#include <string>

namespace cudascope::inject {

// Whether this process writes a summary at exit (RANK is set and not empty).
bool exit_summary_wanted() noexcept;

struct ExitSummaryResult {
  std::string path;   // the summary's file (written unless error says why not); empty if
                      // not even its name could be made
  std::string error;  // why none was written; empty when it was
  std::string line;   // what to tell the user: the rank, the file, the steps found
};

// Summarises the closed trace at `trace_path` into the file beside it. Never throws.
ExitSummaryResult write_exit_summary(const std::string& trace_path) noexcept;

}  // namespace cudascope::inject
