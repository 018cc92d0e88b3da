#include "exit_summary.h"

#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_loader.h>

#include <cstdlib>

namespace cudascope::inject {

bool exit_summary_wanted() noexcept {
  const char* rank = std::getenv("RANK");
  return rank != nullptr && *rank != '\0';
}

ExitSummaryResult write_exit_summary(const std::string& trace_path) noexcept {
  ExitSummaryResult result;
  try {
    result.path = analysis::rank_summary_path_for_trace(trace_path);
    const analysis::TraceLoadResult loaded = analysis::load_trace(trace_path);
    if (!loaded.ok()) {
      result.error = loaded.error;
      return result;
    }
    const analysis::RankSummary summary = analysis::summarize_rank(*loaded.model, trace_path);
    // util::write_file writes beside the path and renames: the summary is whole or absent.
    if (std::string problem = analysis::write_rank_summary(summary, result.path); !problem.empty()) {
      result.error = std::move(problem);
      return result;
    }
    result.line = "rank " + (summary.rank >= 0 ? std::to_string(summary.rank) : std::string("(none)")) +
                  " summary written to " + result.path + " (" + std::to_string(summary.steps.size()) + " steps by " +
                  summary.step_rule + ")";
  } catch (const std::exception& e) {
    result.error = e.what();
  } catch (...) {
    result.error = "unknown error";
  }
  return result;
}

}  // namespace cudascope::inject
