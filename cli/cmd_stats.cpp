// `cudascope stats TRACE [--csv|--json] [--check]`: kernel, memory-operation, NVTX/annotation,
// CPU-op and API tables of a trace (as nsys stats prints them): ours, torch.profiler
// (Kineto) or any Chrome trace, plain or gzip.
// `cudascope stats trace_0.json.gz trace_1.json.gz ...` (several inputs, or rank summaries):
// per-rank and across-rank tables (rank_stats.h). `--summary-out S.json TRACE` writes the
// rank summary of one trace, to merge later without the trace.
#include "checks.h"
#include "command.h"
#include "rank_stats.h"

#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct StatsOptions {
  std::vector<std::string> paths;
  bool csv = false;
  bool json = false;
  bool check = false;
  std::string summary_out;
  std::string step_prefix;
};

// `input` is opened once and read once: a pipe works (<(zcat t.json.gz), a named pipe).
int print_stats(const StatsOptions& options, cudascope::util::PeekedInput& input) {
  using namespace cudascope::analysis;
  const std::string& path = input.path();
  const TraceLoadResult loaded = load_trace(input);
  if (!loaded.ok()) throw std::runtime_error(loaded.error);
  const TraceModel& model = *loaded.model;
  const TraceStats stats = compute_stats(model);
  const StatsFormat format = options.json ? StatsFormat::json : options.csv ? StatsFormat::csv : StatsFormat::table;
  std::fputs(format_stats(stats, format).c_str(), stdout);
  // Machine-readable output keeps stdout clean: the notes go to stderr there.
  cudascope::cli::warn_of_trace_notes(path, model, format == StatsFormat::table);
  if (!options.check) return 0;
  const auto problems = cudascope::cli::check_trace(model);
  for (const std::string& problem : problems) std::fprintf(stderr, "%s: %s\n", path.c_str(), problem.c_str());
  if (problems.empty()) {
    std::fprintf(stderr, "%s: %zu events follow the trace format's rules\n", path.c_str(), model.event_count());
  }
  return problems.empty() ? 0 : 1;
}

int stats_command(const StatsOptions& options) {
  using namespace cudascope;
  analysis::RankSummaryOptions summary;
  summary.step_prefix = options.step_prefix;
  if (!options.summary_out.empty()) {
    const auto input = options.paths.size() == 1 ? cli::open_stats_input(options.paths.front()) : nullptr;
    if (!input || analysis::is_rank_summary(*input)) {
      throw std::runtime_error("--summary-out takes exactly one trace (given " + std::to_string(options.paths.size()) +
                               " inputs); run it once per rank");
    }
    cli::write_rank_summary_of(*input, options.summary_out, summary);
    return 0;
  }
  // One trace: the single-trace tables, as ever. Several inputs, or a summary: the ranks.
  // Each input is opened once: what it is is told from the stream the reader then takes.
  std::shared_ptr<util::PeekedInput> first;
  if (options.paths.size() == 1 && options.step_prefix.empty()) {
    first = cli::open_stats_input(options.paths.front());
    if (!analysis::is_rank_summary(*first)) return print_stats(options, *first);
  }
  cli::RankStatsOptions ranks;
  ranks.inputs = options.paths;
  ranks.first_input = std::move(first);
  ranks.format = options.json ? analysis::StatsFormat::json : options.csv ? analysis::StatsFormat::csv : analysis::StatsFormat::table;
  ranks.summary = summary;
  ranks.check = options.check;
  return cli::print_rank_stats(ranks);
}

}  // namespace

CUDASCOPE_COMMAND(stats, 31) {
  static StatsOptions options;
  CLI::App* sub = app.add_subcommand("stats", "Kernel, memory, NVTX/annotation and CPU-op tables of a trace (like nsys stats); "
                                              "per-rank and across-rank tables of several");
  sub->add_option("inputs", options.paths,
                  "Traces: cudascope run's, torch.profiler's (Kineto) or any Chrome trace-event file (.json or .json.gz). "
                  "Several (one per rank, e.g. trace_*.json.gz), or rank summaries from --summary-out: per-rank and "
                  "across-rank tables (step time, compute, communication, exposed communication, idle, slowest rank; "
                  "collectives per communicator, paired across ranks by process group and sequence number where the "
                  "traces name them, else by order)")
      ->required();
  auto* csv = sub->add_flag("--csv", options.csv, "CSV instead of aligned tables");
  sub->add_flag("--json", options.json, "JSON instead of aligned tables")->excludes(csv);
  sub->add_flag("--check",
                options.check,
                "Also check the trace against the Chrome trace format's rules; exit 1 on violations, when it holds no events "
                "or when the file is cut short (naming the byte where it ends)");
  sub->add_option("--summary-out", options.summary_out,
                  "Write the rank summary of the one TRACE given here (JSON, .gz compresses) and print nothing else: "
                  "run it where each rank's trace is written, then `cudascope stats S0.json S1.json ...` merges them")
      ->check(cudascope::cli::WritableFile());
  sub->add_option("--step-prefix", options.step_prefix,
                  "Steps are the ranges whose name starts with this (default: ProfilerStep#N, else ranges named like "
                  "'step 3', 'train_step', 'iteration 7'); implies the rank tables");
  sub->footer("Budget: CUDASCOPE_INPUT_BUDGET caps the bytes read (default: a quarter of memory).");
  sub->callback([] {
    cudascope::cli::refuse_output_over_inputs("--summary-out", options.summary_out, options.paths);
    cudascope::cli::set_exit_code(stats_command(options));
  });
}
