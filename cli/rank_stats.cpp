#include "rank_stats.h"

#include <cudascope/analysis/rank_merge.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/util/input_budget.h>

#include <cstdio>
#include <stdexcept>

namespace cudascope::cli {
namespace {

// A trace is loaded, summarised and released before the next input is read.
analysis::RankSummary summary_of_input(util::PeekedInput& input, const RankStatsOptions& options, bool& violations) {
  const std::string& path = input.path();
  if (analysis::is_rank_summary(input)) {
    analysis::RankSummaryReadResult read = analysis::read_rank_summary(input);
    if (!read.ok()) throw std::runtime_error(read.error);
    return std::move(read.summary);
  }
  const analysis::TraceLoadResult loaded = analysis::load_trace(input);
  if (!loaded.ok()) throw std::runtime_error(loaded.error);
  warn_of_trace_notes(path, *loaded.model, false);
  if (options.check) {
    for (const std::string& problem : check_trace(*loaded.model)) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), problem.c_str());
      violations = true;
    }
  }
  return analysis::summarize_rank(*loaded.model, path, options.summary);
}

}  // namespace

void warn_of_trace_notes(const std::string& path, const analysis::TraceModel& model, bool notes_on_stdout) {
  if (!notes_on_stdout) {
    for (const std::string& note : model.notes) std::fprintf(stderr, "%s: %s\n", path.c_str(), note.c_str());
    return;  // the cut-short note is among them
  }
  if (model.cut_short) {
    std::fprintf(stderr, "%s: warning: %s: the figures cover only the %zu events read\n", path.c_str(),
                 model.cut_short_reason.c_str(), model.event_count());
  }
}

std::vector<std::string> check_trace(const analysis::TraceModel& model) {
  std::vector<std::string> problems = analysis::validate_trace(model);
  if (model.cut_short) problems.insert(problems.begin(), model.cut_short_reason + ": not a whole trace");
  return problems;
}

std::unique_ptr<util::PeekedInput> open_stats_input(const std::string& path) {
  std::string error;
  auto input = util::PeekedInput::open(path, util::input_budget(), error);
  if (!input) throw std::runtime_error("cannot open trace '" + path + "': " + error);
  return input;
}

int print_rank_stats(const RankStatsOptions& options) {
  std::vector<analysis::RankSummary> summaries;
  bool violations = false;
  for (std::size_t i = 0; i < options.inputs.size(); ++i) {
    if (i == 0 && options.first_input) {
      summaries.push_back(summary_of_input(*options.first_input, options, violations));
      continue;
    }
    const std::unique_ptr<util::PeekedInput> input = open_stats_input(options.inputs[i]);
    summaries.push_back(summary_of_input(*input, options, violations));
  }
  const analysis::RankReport report = analysis::merge_rank_summaries(summaries);
  std::fputs(analysis::format_rank_report(report, options.format).c_str(), stdout);
  return violations ? 1 : 0;
}

void write_rank_summary_of(util::PeekedInput& input, const std::string& summary_path,
                           const analysis::RankSummaryOptions& options) {
  const std::string& trace = input.path();
  const analysis::TraceLoadResult loaded = analysis::load_trace(input);
  if (!loaded.ok()) throw std::runtime_error(loaded.error);
  warn_of_trace_notes(trace, *loaded.model, false);
  const analysis::RankSummary summary = analysis::summarize_rank(*loaded.model, trace, options);
  if (const std::string problem = analysis::write_rank_summary(summary, summary_path); !problem.empty()) {
    throw std::runtime_error("--summary-out: " + problem);
  }
  std::fprintf(stderr, "%s: rank %s summary written to %s (%zu steps by %s)\n", trace.c_str(),
               summary.rank >= 0 ? std::to_string(summary.rank).c_str() : "(none)", summary_path.c_str(),
               summary.steps.size(), summary.step_rule.c_str());
}

}  // namespace cudascope::cli
