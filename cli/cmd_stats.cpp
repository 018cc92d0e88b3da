// `cudascope stats TRACE [--csv] [--check]`: kernel, NVTX range and memory-operation tables
// from a trace (as nsys stats prints them), and the records dropped while recording.
#include "command.h"

#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

struct StatsOptions {
  std::string path;
  bool csv = false;
  bool check = false;
};

int print_stats(const StatsOptions& options) {
  const cudascope::analysis::TraceReadResult read = cudascope::analysis::read_trace(options.path);
  if (!read.ok()) throw std::runtime_error(read.error);
  const auto stats = cudascope::analysis::compute_stats(read.trace);
  std::fputs(cudascope::analysis::format_stats(stats, options.csv).c_str(), stdout);
  if (!options.check) return 0;
  const auto problems = cudascope::analysis::validate_trace(read.trace);
  for (const std::string& problem : problems) std::fprintf(stderr, "%s: %s\n", options.path.c_str(), problem.c_str());
  if (problems.empty()) std::fprintf(stderr, "%s: follows the trace format's rules\n", options.path.c_str());
  return problems.empty() ? 0 : 1;
}

}  // namespace

CUDASCOPE_COMMAND(stats, 31) {
  static StatsOptions options;
  CLI::App* sub = app.add_subcommand("stats", "Kernel, NVTX and memory tables of a trace (like nsys stats)");
  sub->add_option("trace", options.path, "A trace written by cudascope run (.json or .json.gz)")->required();
  sub->add_flag("--csv", options.csv, "CSV instead of aligned tables");
  sub->add_flag("--check", options.check, "Also check the trace against the Chrome trace format's rules (exit 1 on violations)");
  sub->callback([] { cudascope::cli::set_exit_code(print_stats(options)); });
}
