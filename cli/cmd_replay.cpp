// `cudascope replay FILE.jsonl[.gz] [--stats-json OUT] [--recorded-addresses SEGMENTS]
// [--snapshot OUT]`: replays an allocation sequence recorded with PyTorch through the caching
// allocator and writes memory_stats() as JSON. The device addresses are the driver's on a GPU
// and the sim's own on the sim backend (placed as the driver places them); --recorded-addresses
// orders equal-size blocks by the recording process's instead. --snapshot records the
// allocator's history through the replay and writes the snapshot of its end, after the last op
// and before the replay frees what the sequence left: every segment's address as the device
// gave it, for the viewer or to tell one process's placement from another's.
#include "checks.h"
#include "command.h"

#include <cudascope/cuda.h>
#include <cudascope/util/output_file.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct ReplayOptions {
  std::string file;
  std::string stats_json;
  std::string recorded_addresses;
  std::string snapshot;
  bool summary = false;
};

std::string to_json(const std::map<std::string, std::int64_t>& stats) {
  std::string out = "{\n";
  bool first = true;
  for (const auto& [key, value] : stats) {
    if (!first) out += ",\n";
    first = false;
    out += " \"" + key + "\": " + std::to_string(value);
  }
  return out + "\n}\n";
}

// memory_stats() as JSON to --stats-json (stdout by default); false, said on stderr, when the
// file cannot be written. Written whole beside the path and renamed over it: a full disk
// leaves what the path held before, not half a file.
bool write_stats(const ReplayOptions& options, const std::map<std::string, std::int64_t>& stats) {
  const std::string json = to_json(stats);
  if (options.stats_json.empty() || options.stats_json == "-") {
    std::fputs(json.c_str(), stdout);
    return true;
  }
  try {
    cudascope::util::write_file(options.stats_json, json);
    return true;
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "cudascope replay: error: --stats-json: %s\n", e.what());
    return false;
  }
}

// The stats and the snapshot to one file would leave only the last written.
void refuse_one_file_for_both(const ReplayOptions& options) {
  if (options.snapshot.empty() || options.stats_json.empty() || options.stats_json == "-") return;
  std::error_code error;
  const auto stats = std::filesystem::weakly_canonical(options.stats_json, error);
  const auto snapshot = std::filesystem::weakly_canonical(options.snapshot, error);
  if (!error && stats == snapshot) {
    throw CLI::ValidationError("--snapshot", "'" + options.snapshot + "' is also --stats-json: give each its own file");
  }
}

int run_replay(const ReplayOptions& options) {
  using namespace cudascope;
  cli::check_backend_variable();
  cli::refuse_output_over_inputs("--stats-json", options.stats_json, {options.file, options.recorded_addresses});
  cli::refuse_output_over_inputs("--snapshot", options.snapshot, {options.file, options.recorded_addresses});
  refuse_one_file_for_both(options);
  // The list is read before any device is touched: a bad one is a usage error.
  std::vector<std::uintptr_t> addresses;
  if (!options.recorded_addresses.empty()) {
    try {
      addresses = cuda::memory::read_recorded_addresses(options.recorded_addresses);
    } catch (const cuda::Error& e) {
      throw CLI::ValidationError("--recorded-addresses", cudascope::cli::error_detail(e));
    }
  }
  // Replays run wherever they can: a GPU when there is one, else the simulated device.
  if (std::getenv("CUDASCOPE_BACKEND") == nullptr) setenv("CUDASCOPE_BACKEND", "auto", 1);
  // Without stacks: a stack walk per action would slow a long sequence for frames that all
  // name the replay loop. The last million actions: 48 MB at most.
  // The snapshot shows the sequence's end: taken after its last op, before the replay frees
  // what the sequence left allocated.
  std::optional<cuda::memory::Snapshot> end_state;
  cuda::memory::ReplayEnd at_end;
  if (!options.snapshot.empty()) {
    cuda::memory::record_memory_history("all", std::nullopt, "python", 1'000'000);
    at_end = [&end_state] { end_state = cuda::memory::memory_snapshot(); };
  }
  std::map<std::string, std::int64_t> stats;
  try {
    stats = cuda::memory::replay_file(options.file, addresses, at_end);
  } catch (const cuda::Error& e) {  // the file and line at fault, not the code's
    std::fprintf(stderr, "cudascope replay: error: %s\n", cudascope::cli::error_detail(e).c_str());
    return 1;
  }
  // The stats first: a snapshot that cannot be written loses nothing else.
  if (!write_stats(options, stats)) return 1;
  if (options.summary) std::fputs(cuda::format_memory_summary(stats, cuda::current_device(), false).c_str(), stderr);
  if (end_state) {
    try {
      cuda::memory::dump_snapshot(*end_state, options.snapshot);
    } catch (const cuda::Error& e) {
      std::fprintf(stderr, "cudascope replay: error: --snapshot: %s\n", cudascope::cli::error_detail(e).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace

CUDASCOPE_COMMAND(replay, 40) {
  static ReplayOptions options;
  CLI::App* sub = app.add_subcommand("replay", "Replay an allocation sequence through the caching allocator");
  sub->add_option("file", options.file, "Sequence (.jsonl or .jsonl.gz): a header line, then alloc/free ops")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--stats-json", options.stats_json, "Write memory_stats() here as JSON (default: stdout)")
      ->check(cudascope::cli::WritableFile(/*allow_stdout=*/true));
  sub->add_option("--recorded-addresses", options.recorded_addresses,
                  "Break best-fit ties by the addresses another process's cudaMalloc returned (a JSON list "
                  "in order, such as NAME.segments.json.gz from tests/data/make_replay.py) instead of the "
                  "device's own (the sim's or the driver's); fails unless the replay uses every one")
      ->check(CLI::ExistingFile);
  sub->add_option("--snapshot", options.snapshot,
                  "Record the allocator's history (no stacks) and write the memory snapshot of the sequence's end here "
                  "(.pickle, .json, optionally .gz): each segment's address as the device placed it")
      ->check(cudascope::cli::SnapshotFile());
  sub->add_flag("--summary", options.summary, "Also print memory_summary() on stderr");
  sub->callback([] { cudascope::cli::set_exit_code(run_replay(options)); });
}
