#pragma once
// What-if: a snapshot's allocation requests (snapshot_requests.h) replayed through the
// caching allocator under other settings, each in a fresh allocator state, with the figures
// that decide whether a setting helps: peaks, fragmentation at the peak, cudaMalloc calls,
// retries, and whether it would run out of memory under a limit.
//
// Runs on the current device of the runtime's backend (the CLI selects the sim). Settings run
// one after another: the allocator's configuration is process-wide, so two replays cannot
// share a process at once. Not thread-safe for the same reason.

#include <cudascope/analysis/snapshot_requests.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct WhatIfFigures {
  std::string conf;  // as given, PYTORCH_CUDA_ALLOC_CONF syntax ("" = defaults)
  uint64_t peak_reserved = 0;
  uint64_t peak_allocated = 0;
  // At the moment reserved first reached its peak: figures.h's definition,
  // 1 - largest free block / inactive (reserved - active), 0 when nothing is free.
  double fragmentation_at_peak = 0.0;
  uint64_t largest_free_block_at_peak = 0;
  uint64_t inactive_at_peak = 0;
  uint64_t device_allocs = 0;  // cudaMalloc calls (num_device_alloc)
  uint64_t alloc_retries = 0;  // num_alloc_retries: mallocs that freed the cache and tried again
  uint64_t ooms = 0;           // requests that could not be served under the limit
  // The first of those: its absolute trace index, or SnapshotRequests::kBeforeTrace for an
  // allocation assumed live at the start. Meaningful when ooms > 0.
  uint32_t first_oom_entry = 0;
  double wall_seconds = 0.0;
  double cpu_seconds = 0.0;
};

// Checks each setting (AllocatorConfig::parse); the first bad one throws cuda::Error naming
// it, before any replay runs.
void check_settings(const std::vector<std::string>& confs);

struct WhatIfOptions {
  std::vector<std::string> confs;  // PYTORCH_CUDA_ALLOC_CONF syntax each
  // Caps reserved bytes as a memory fraction does; without one only the backend's capacity
  // limits the replay (so a cached block is released only by empty_cache()).
  std::optional<uint64_t> memory_limit;
  // (setting index, requests done, total), about every 64Ki requests.
  std::function<void(size_t, size_t, size_t)> progress;
};

// Replays `requests` once per setting, each in a fresh allocator state.
std::vector<WhatIfFigures> run_whatif(const SnapshotRequests& requests, const WhatIfOptions& options);

}  // namespace cudascope::analysis
