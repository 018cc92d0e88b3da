#include <cudascope/analysis/whatif.h>

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/error.h>

#include <chrono>
#include <ctime>

namespace cudascope::analysis {
namespace {

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

uint64_t stat(const std::map<std::string, int64_t>& stats, const char* key) {
  auto it = stats.find(key);
  return it == stats.end() || it->second < 0 ? 0 : static_cast<uint64_t>(it->second);
}

WhatIfFigures replay_one(const SnapshotRequests& r, const std::string& conf, const WhatIfOptions& options,
                         std::function<void(size_t)> progress) {
  WhatIfFigures f;
  f.conf = conf;
  cuda::memory::ReplayRequestsOptions replay;
  replay.conf = conf;
  if (options.memory_limit) replay.memory_limit = static_cast<std::size_t>(*options.memory_limit);
  replay.name = "--conf";
  replay.progress = std::move(progress);
  const auto wall0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_now();
  const cuda::memory::ReplayOutcome o = cuda::memory::replay_requests(r.requests, replay);
  f.cpu_seconds = cpu_now() - cpu0;
  f.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  f.peak_reserved = stat(o.stats, "reserved_bytes.all.peak");
  f.peak_allocated = stat(o.stats, "allocated_bytes.all.peak");
  f.device_allocs = stat(o.stats, "num_device_alloc");
  f.alloc_retries = stat(o.stats, "num_alloc_retries");
  f.largest_free_block_at_peak = static_cast<uint64_t>(o.largest_free_block_at_peak);
  f.inactive_at_peak = static_cast<uint64_t>(o.inactive_at_peak);
  f.fragmentation_at_peak = o.inactive_at_peak > 0 ? 1.0 - static_cast<double>(o.largest_free_block_at_peak) /
                                                               static_cast<double>(o.inactive_at_peak)
                                                   : 0.0;
  f.ooms = o.oom_requests.size();
  if (!o.oom_requests.empty()) f.first_oom_entry = r.entry[o.oom_requests.front()];
  return f;
}

}  // namespace

void check_settings(const std::vector<std::string>& confs) {
  for (const std::string& conf : confs) {
    const cuda::AllocatorConfig config = cuda::AllocatorConfig::parse(conf, "--conf");
    // cudaMallocAsync's pool is the driver's: a replay through the caching allocator would
    // print the native backend's figures under its name.
    if (config.backend != "native") {
      throw cuda::Error(cuda::error_code::kInvalidValue, "whatif", __FILE__, __LINE__,
                        "'" + conf + "': whatif replays the caching allocator (backend:native); the " + config.backend +
                            " backend's memory is the driver's pool, which it does not model");
    }
  }
}

std::vector<WhatIfFigures> run_whatif(const SnapshotRequests& requests, const WhatIfOptions& options) {
  check_settings(options.confs);
  std::vector<WhatIfFigures> out;
  for (size_t k = 0; k < options.confs.size(); ++k) {
    std::function<void(size_t)> step;
    if (options.progress) step = [&, k](size_t done) { options.progress(k, done, requests.requests.size()); };
    out.push_back(replay_one(requests, options.confs[k], options, std::move(step)));
  }
  return out;
}

}  // namespace cudascope::analysis
