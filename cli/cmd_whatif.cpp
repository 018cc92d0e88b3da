// `cudascope whatif SNAPSHOT --conf A --conf B ... [--memory-limit 40GiB] [--json]`: replays
// a snapshot's allocation requests through the caching allocator on the simulated device
// under each setting (and the snapshot's own, first), and prints the figures side by side.
#include "checks.h"
#include "command.h"
#include "json_output.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/loader.h>
#include <cudascope/analysis/whatif.h>
#include <cudascope/cuda/error.h>
#include <cudascope/util/byte_format.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace cudascope::analysis;

constexpr int kWhatifUsageError = 2;
// Room for any recorded peak on the simulated device: address space reserved, never touched.
constexpr const char* kWhatifSimMemory = "256GiB";  // the sim's most

struct WhatifOptions {
  std::string file;
  std::vector<std::string> confs;
  std::string memory_limit;
  int device = -1;
  bool json = false;
};

std::string whatif_human(uint64_t bytes) { return cudascope::util::format_bytes(bytes); }

std::string history_note(const SnapshotRequests& r) {
  if (r.complete()) return "the trace starts at the first allocation";
  std::string note = "the trace starts after the program's first allocation: " + std::to_string(r.live_at_start) +
                     " blocks (" + whatif_human(r.live_at_start_bytes) +
                     ") live before it are assumed allocated first, in address order";
  if (r.segments_before_trace)
    note += "; " + std::to_string(r.segments_before_trace) +
            " segments reserved before it are not replayed, so the figures cover the traced window";
  return note;
}

std::vector<std::string> whatif_notes(const SnapshotRequests& r) {
  std::vector<std::string> notes{history_note(r)};
  if (r.used_free_requested) notes.push_back("the trace has no free_completed entries; blocks are freed at free_requested");
  if (r.empty_cache_calls) notes.push_back(std::to_string(r.empty_cache_calls) + " empty_cache() calls inferred");
  if (r.mismatched_entries)
    notes.push_back(std::to_string(r.mismatched_entries) + " allocs over a block still live (its free missing): freed first");
  if (r.sizes_all_512_aligned)
    notes.push_back("every alloc size is a multiple of 512: if these are block sizes rather than requests, "
                    "the predictions are upper bounds");
  return notes;
}

std::string oom_text(const WhatIfFigures& f) {
  if (f.ooms == 0) return "no";
  if (f.first_oom_entry == SnapshotRequests::kBeforeTrace) return "yes, before the trace";
  return "yes, entry " + std::to_string(f.first_oom_entry) + (f.ooms > 1 ? " (+" + std::to_string(f.ooms - 1) + ")" : "");
}

nlohmann::json whatif_json(const WhatifOptions& o, const SnapshotRequests& r, const Figures& recorded,
                           bool single_device, const std::vector<WhatIfFigures>& rows,
                           const std::optional<uint64_t>& limit) {
  nlohmann::json settings = nlohmann::json::array();
  for (size_t k = 0; k < rows.size(); ++k) {
    const WhatIfFigures& f = rows[k];
    nlohmann::json row = {{"conf", f.conf},
                          {"baseline", k == 0},
                          {"peak_reserved_bytes", f.peak_reserved},
                          {"peak_allocated_bytes", f.peak_allocated},
                          {"fragmentation_at_peak", f.fragmentation_at_peak},
                          {"largest_free_block_at_peak", f.largest_free_block_at_peak},
                          {"inactive_bytes_at_peak", f.inactive_at_peak},
                          {"cuda_malloc_count", f.device_allocs},
                          {"alloc_retries", f.alloc_retries},
                          {"oom", f.ooms > 0},
                          {"oom_count", f.ooms},
                          {"wall_seconds", f.wall_seconds},
                          {"cpu_seconds", f.cpu_seconds}};
    row["first_oom_entry"] = f.ooms == 0 ? nlohmann::json(nullptr)
                             : f.first_oom_entry == SnapshotRequests::kBeforeTrace
                                 ? nlohmann::json(-1)
                                 : nlohmann::json(f.first_oom_entry);
    settings.push_back(row);
  }
  nlohmann::json out = {{"file", o.file},
                        {"device", r.device},
                        {"trace_entries", r.trace_entries},
                        {"requests", r.requests.size()},
                        {"history_complete", r.complete()},
                        {"live_at_start", r.live_at_start},
                        {"live_at_start_bytes", r.live_at_start_bytes},
                        {"segments_before_trace", r.segments_before_trace},
                        {"empty_cache_calls", r.empty_cache_calls},
                        {"notes", whatif_notes(r)},
                        {"settings", settings}};
  out["memory_limit_bytes"] = limit ? nlohmann::json(*limit) : nlohmann::json(nullptr);
  if (single_device)
    out["recorded"] = {{"peak_reserved_bytes", recorded.peak_reserved_bytes},
                       {"cuda_malloc_count", recorded.actions[static_cast<int>(Action::segment_alloc)]}};
  return out;
}

void whatif_text(const WhatifOptions& o, const SnapshotRequests& r, const Figures& recorded, bool single_device,
                 const std::vector<WhatIfFigures>& rows, const std::optional<uint64_t>& limit) {
  std::printf("%s: device %d, %llu trace entries -> %zu requests\n", o.file.c_str(), r.device,
              (unsigned long long)r.trace_entries, r.requests.size());
  for (const std::string& note : whatif_notes(r)) std::printf("  note: %s\n", note.c_str());
  if (single_device)
    std::printf("  recorded: peak reserved %s, %llu cudaMalloc\n", whatif_human(recorded.peak_reserved_bytes).c_str(),
                (unsigned long long)recorded.actions[static_cast<int>(Action::segment_alloc)]);
  if (limit) std::printf("  memory limit: %s\n", whatif_human(*limit).c_str());
  std::printf("\n%-44s %14s %14s %9s %14s %10s %8s  %s\n", "setting", "peak reserved", "peak allocated", "frag@peak",
              "largest free", "cudaMalloc", "retries", "OOM");
  for (size_t k = 0; k < rows.size(); ++k) {
    const WhatIfFigures& f = rows[k];
    std::string name = (f.conf.empty() ? std::string("(defaults)") : f.conf) + (k == 0 ? " [snapshot]" : "");
    std::printf("%-44s %14s %14s %8.1f%% %14s %10llu %8llu  %s\n", name.c_str(), whatif_human(f.peak_reserved).c_str(),
                whatif_human(f.peak_allocated).c_str(), 100.0 * f.fragmentation_at_peak,
                whatif_human(f.largest_free_block_at_peak).c_str(), (unsigned long long)f.device_allocs,
                (unsigned long long)f.alloc_retries, oom_text(f).c_str());
  }
}

// A progress line on stderr for long traces: rewritten in place on a terminal, one line per
// quarter otherwise (so logs stay short).
std::function<void(size_t, size_t, size_t)> whatif_progress(size_t settings) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  return [tty, settings, last = size_t(0)](size_t k, size_t done, size_t total) mutable {
    const size_t quarter = total == 0 ? 4 : done * 4 / total;
    if (!tty && done != 0 && quarter == last && done != total) return;
    last = quarter;
    std::fprintf(stderr, "%swhatif: setting %zu/%zu: %zu/%zu requests%s", tty ? "\r" : "", k + 1, settings, done,
                 total, tty && !(k + 1 == settings && done == total) ? "" : "\n");
    if (done == total) last = 0;
  };
}

int run_whatif_command(const WhatifOptions& o) {
  std::optional<uint64_t> limit;
  if (!o.memory_limit.empty()) {
    uint64_t bytes = 0;
    if (!cudascope::util::parse_byte_size(o.memory_limit, bytes) || bytes == 0) {
      std::fprintf(stderr, "cudascope whatif: error: --memory-limit '%s' is not a byte size (e.g. 40GiB, 512MiB)\n",
                   o.memory_limit.c_str());
      return kWhatifUsageError;
    }
    limit = bytes;
  }
  try {
    check_settings(o.confs);
  } catch (const cudascope::cuda::Error& e) {
    std::fprintf(stderr, "cudascope whatif: error: %s\n", cudascope::cli::error_detail(e).c_str());
    return kWhatifUsageError;
  }
  auto loaded = load_snapshot(o.file);
  if (!loaded) {
    std::fprintf(stderr, "cudascope whatif: error: %s\n", loaded.error().message().c_str());
    return 1;
  }
  const Snapshot& snap = loaded.value();
  const int device = o.device >= 0 ? o.device : busiest_device(snap);
  if (device < 0) {
    std::fprintf(stderr,
                 "cudascope whatif: error: %s has no trace entries; record them with "
                 "torch.cuda.memory._record_memory_history() before the allocations\n",
                 o.file.c_str());
    return 1;
  }
  const std::string own = snapshot_alloc_conf(snap);
  try {
    check_settings({own});
  } catch (const cudascope::cuda::Error& e) {
    std::fprintf(stderr, "cudascope whatif: error: the snapshot's own settings: %s\n", cudascope::cli::error_detail(e).c_str());
    return 1;
  }
  const SnapshotRequests requests = snapshot_requests(snap, device);
  std::vector<std::string> confs{own};
  for (const std::string& conf : o.confs) {
    if (std::find(confs.begin(), confs.end(), conf) == confs.end()) {
      confs.push_back(conf);
    } else {  // the same replay again would print the same row twice
      std::fprintf(stderr, "cudascope whatif: note: --conf '%s' is %s; shown once\n", conf.c_str(),
                   conf == own ? "the snapshot's own setting" : "given twice");
    }
  }
  // The replays run on the simulated device, whatever this machine has: nothing is allocated
  // on a GPU, and a capacity far above any recorded peak leaves the limit to --memory-limit.
  setenv("CUDASCOPE_BACKEND", "sim", 1);
  setenv("CUDASCOPE_SIM_DEVICES", "1", 1);
  if (std::getenv("CUDASCOPE_SIM_MEMORY") == nullptr) setenv("CUDASCOPE_SIM_MEMORY", kWhatifSimMemory, 1);
  const bool long_trace = requests.requests.size() >= (1u << 17);
  WhatIfOptions options;
  options.confs = confs;
  options.memory_limit = limit;
  if (long_trace) options.progress = whatif_progress(confs.size());
  std::vector<WhatIfFigures> rows;
  try {
    rows = run_whatif(requests, options);
  } catch (const cudascope::cuda::OutOfMemoryError&) {
    throw;  // not a refusal: run_whatif counts these itself
  } catch (const cudascope::cuda::Error& e) {
    // A sim device without address space (ulimit -v), a request the allocator cannot round.
    std::fprintf(stderr, "cudascope whatif: error: %s\n", cudascope::cli::error_detail(e).c_str());
    return 1;
  }
  const std::vector<int> devices = snap.device_ids();
  const bool single_device = devices.size() == 1;
  const Figures recorded = single_device ? compute_figures(snap) : Figures{};
  if (o.json) std::printf("%s\n", cudascope::cli::json_text(whatif_json(o, requests, recorded, single_device, rows, limit)).c_str());
  else whatif_text(o, requests, recorded, single_device, rows, limit);
  return 0;
}

}  // namespace

CUDASCOPE_COMMAND(whatif, 62) {
  auto options = std::make_shared<WhatifOptions>();
  CLI::App* sub = app.add_subcommand(
      "whatif", "Predict a snapshot's memory under other allocator settings (replayed on the simulated device)");
  sub->footer(
      "The snapshot's trace (torch.cuda.memory._record_memory_history) is turned into the requests the program\n"
      "made (alloc at the requested size, free at free_completed, empty_cache where segments were released\n"
      "outside a malloc) and replayed through cudascope's caching allocator - PyTorch's algorithm - in a fresh\n"
      "state per setting, the snapshot's own settings first. Nothing runs on a GPU.\n"
      "When the trace does not start at the program's first allocation (a ring buffer that wrapped, history\n"
      "recorded late), blocks live before it are assumed allocated first, in address order, and the output\n"
      "says so; segments cached before it cannot be recovered. Record from the start for exact predictions.\n"
      "Without --memory-limit the simulated device holds 256 GiB (CUDASCOPE_SIM_MEMORY overrides), so cached\n"
      "blocks are released only where the program called empty_cache(); with it, as on a GPU of that size.\n"
      "Exit status: 0 done, 1 the snapshot cannot be read or replayed, 2 a bad option or setting.");
  sub->add_option("SNAPSHOT", options->file, "snapshot (PyTorch pickle or cudascope JSON, plain or gzip)")->required();
  sub->add_option("--conf", options->confs,
                  "a setting to try, PYTORCH_CUDA_ALLOC_CONF syntax (e.g. expandable_segments:True, "
                  "max_split_size_mb:128); repeat for more");
  sub->add_option("--memory-limit", options->memory_limit,
                  "the device memory to fit in (e.g. 40GiB): each setting says whether and where it runs out")
      ->check(cudascope::cli::PositiveByteSize());
  sub->add_option("--device", options->device, "the device whose trace to replay (default: the longest trace)")
      ->check(CLI::Range(0, 1023));
  sub->add_flag("--json", options->json, "print one JSON object instead of the table");
  sub->callback([options] { cudascope::cli::set_exit_code(run_whatif_command(*options)); });
}
