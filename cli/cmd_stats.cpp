// `cudascope stats TRACE [--csv|--json] [--check]`: kernel, memory-operation, NVTX/annotation,
// CPU-op and API tables of a trace (as nsys stats prints them): ours, torch.profiler
// (Kineto) or any Chrome trace, plain or gzip.
#include "command.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

struct StatsOptions {
  std::string path;
  bool csv = false;
  bool json = false;
  bool check = false;
};

int print_stats(const StatsOptions& options) {
  using namespace cudascope::analysis;
  const TraceLoadResult loaded = load_trace(options.path);
  if (!loaded.ok()) throw std::runtime_error(loaded.error);
  const TraceModel& model = *loaded.model;
  const TraceStats stats = compute_stats(model);
  const StatsFormat format = options.json ? StatsFormat::json : options.csv ? StatsFormat::csv : StatsFormat::table;
  std::fputs(format_stats(stats, format).c_str(), stdout);
  // Machine-readable output keeps stdout clean: the notes go to stderr there.
  if (format != StatsFormat::table) {
    for (const std::string& note : model.notes) std::fprintf(stderr, "%s: %s\n", options.path.c_str(), note.c_str());
  }
  if (!options.check) return 0;
  const auto problems = validate_trace(model);
  for (const std::string& problem : problems) std::fprintf(stderr, "%s: %s\n", options.path.c_str(), problem.c_str());
  if (problems.empty()) {
    std::fprintf(stderr, "%s: %zu events follow the trace format's rules\n", options.path.c_str(), model.event_count());
  }
  return problems.empty() ? 0 : 1;
}

}  // namespace

CUDASCOPE_COMMAND(stats, 31) {
  static StatsOptions options;
  CLI::App* sub = app.add_subcommand("stats", "Kernel, memory, NVTX/annotation and CPU-op tables of a trace (like nsys stats)");
  sub->add_option("trace", options.path,
                  "A trace: cudascope run's, torch.profiler's (Kineto) or any Chrome trace-event file (.json or .json.gz)")
      ->required();
  auto* csv = sub->add_flag("--csv", options.csv, "CSV instead of aligned tables");
  sub->add_flag("--json", options.json, "JSON instead of aligned tables")->excludes(csv);
  sub->add_flag("--check",
                options.check,
                "Also check the trace against the Chrome trace format's rules; exit 1 on violations or when it holds no events");
  sub->footer("Budget: CUDASCOPE_INPUT_BUDGET caps the bytes read (default: a quarter of memory).");
  sub->callback([] { cudascope::cli::set_exit_code(print_stats(options)); });
}
