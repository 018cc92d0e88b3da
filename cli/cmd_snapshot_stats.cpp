// `cudascope snapshot-stats FILE [--json]`: the figures of an allocator snapshot (PyTorch
// pickle or cudascope JSON, plain or gzip), from the same library the viewer uses.
#include "command.h"
#include "json_output.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/loader.h>

#include <cudascope/util/byte_format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace {

using namespace cudascope::analysis;

std::string human(uint64_t bytes) { return cudascope::util::format_bytes(bytes); }

nlohmann::json to_json(const std::string& file, const Figures& f) {
  nlohmann::json actions = nlohmann::json::object();
  for (int a = 0; a < kActionCount; ++a)
    if (f.actions[a]) actions[std::string(action_name(static_cast<Action>(a)))] = f.actions[a];
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamFigures& s : f.streams)
    streams.push_back({{"stream", s.stream},
                       {"segments", s.segments},
                       {"blocks", s.blocks},
                       {"trace_entries", s.trace_entries},
                       {"reserved_bytes", s.reserved_bytes},
                       {"allocated_bytes", s.allocated_bytes},
                       {"active_bytes", s.active_bytes},
                       {"inactive_bytes", s.inactive_bytes},
                       {"largest_free_block", s.largest_free_block}});
  return {{"file", file},
          {"segments", f.segments},
          {"blocks", f.blocks},
          {"trace_entries", f.trace_entries},
          {"reserved_bytes", f.reserved_bytes},
          {"allocated_bytes", f.allocated_bytes},
          {"active_bytes", f.active_bytes},
          {"requested_bytes", f.requested_bytes},
          {"inactive_bytes", f.inactive_bytes},
          {"largest_free_block", f.largest_free_block},
          {"internal_fragmentation_bytes", f.internal_fragmentation_bytes},
          {"external_fragmentation_ratio", f.external_fragmentation_ratio},
          {"oom_entries", f.oom_entries},
          {"devices", f.devices},
          {"actions", actions},
          {"streams", streams}};
}

void print_text(const std::string& file, const Figures& f) {
  std::printf("%s\n", file.c_str());
  std::printf("  segments            %llu\n", (unsigned long long)f.segments);
  std::printf("  blocks              %llu\n", (unsigned long long)f.blocks);
  std::printf("  trace entries       %llu\n", (unsigned long long)f.trace_entries);
  std::printf("  reserved            %s (%llu)\n", human(f.reserved_bytes).c_str(), (unsigned long long)f.reserved_bytes);
  std::printf("  allocated           %s (%llu)\n", human(f.allocated_bytes).c_str(), (unsigned long long)f.allocated_bytes);
  std::printf("  active              %s (%llu)\n", human(f.active_bytes).c_str(), (unsigned long long)f.active_bytes);
  std::printf("  inactive (cached)   %s\n", human(f.inactive_bytes).c_str());
  std::printf("  largest free block  %s\n", human(f.largest_free_block).c_str());
  std::printf("  internal fragmentation  %s\n", human(f.internal_fragmentation_bytes).c_str());
  std::printf("  external fragmentation  %.1f%%\n", 100.0 * f.external_fragmentation_ratio);
  std::printf("  oom entries         %llu\n", (unsigned long long)f.oom_entries);
  std::printf("  actions            ");
  for (int a = 0; a < kActionCount; ++a)
    if (f.actions[a])
      std::printf(" %s=%llu", std::string(action_name(static_cast<Action>(a))).c_str(), (unsigned long long)f.actions[a]);
  std::printf("\n  %-20s %9s %7s %12s %12s %12s %12s\n", "stream", "segments", "blocks", "reserved", "allocated",
              "active", "largest free");
  for (const StreamFigures& s : f.streams)
    std::printf("  %#-20llx %9llu %7llu %12s %12s %12s %12s\n", (unsigned long long)s.stream,
                (unsigned long long)s.segments, (unsigned long long)s.blocks, human(s.reserved_bytes).c_str(),
                human(s.allocated_bytes).c_str(), human(s.active_bytes).c_str(), human(s.largest_free_block).c_str());
}

}  // namespace

CUDASCOPE_COMMAND(snapshot_stats, 60) {
  struct Options {
    std::string file;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "snapshot-stats",
      "Print the figures of an allocator snapshot (PyTorch pickle protocol 2-5 or cudascope JSON, plain or gzip)");
  sub->add_option("FILE", options->file, "snapshot file")->required();
  sub->add_flag("--json", options->json, "print one JSON object instead of text");
  sub->callback([options] {
    auto result = load_snapshot(options->file);
    if (!result) {
      std::fprintf(stderr, "cudascope snapshot-stats: error: %s\n", result.error().message().c_str());
      cudascope::cli::set_exit_code(1);
      return;
    }
    const Figures figures = compute_figures(result.value());
    if (options->json) std::printf("%s\n", cudascope::cli::json_text(to_json(options->file, figures)).c_str());
    else print_text(options->file, figures);
  });
}
