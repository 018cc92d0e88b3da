#pragma once
// The caching allocator's configuration, read from CUDASCOPE_ALLOC_CONF, else from
// PYTORCH_CUDA_ALLOC_CONF, with PyTorch's syntax:
//   max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8],expandable_segments:True
// Thread-safety: AllocatorConfig is a plain value; parse() is pure.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace cudascope::cuda {

struct AllocatorConfig {
  // One roundup_power2_divisions entry per power-of-two interval from 1 MiB to 64 GiB.
  static constexpr std::size_t kRoundupIntervals = 16;

  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  std::size_t max_non_split_rounding_size = 20u << 20;
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  // The device lock is released while cudaMalloc runs, so other threads keep allocating
  // from the cache meanwhile (not with expandable segments, as PyTorch).
  bool release_lock_on_cudamalloc = false;
  // Pinned host memory (host_memory.h) from malloc + cudaHostRegister instead of
  // cudaHostAlloc, its pages first touched by pinned_num_register_threads threads (a power of
  // two, at most 128) so the driver's global lock is held only for the registration.
  bool pinned_use_cuda_host_register = false;
  std::size_t pinned_num_register_threads = 1;
  // A background thread returns pinned blocks whose stream work is done to the cache, instead
  // of each allocation looking at every pending event.
  bool pinned_use_background_threads = false;
  // pinned_reserve_segment_size_mb: one pinned segment of this size made at the first pinned
  // allocation; requests are carved from it (4 KiB-rounded) until it is used up. 0: none.
  std::size_t pinned_reserve_segment_size = 0;
  bool graph_capture_record_stream_reuse = false;
  std::string backend = "native";  // "native" or "cudaMallocAsync"
  std::array<std::size_t, kRoundupIntervals> roundup_power2_divisions{};
  std::string text;  // the configuration as given (snapshots report it)

  // Parses `text`. A bad key or value throws cuda::Error naming `source` (the variable it
  // came from), the key and the value.
  static AllocatorConfig parse(const std::string& text, const std::string& source = "CUDASCOPE_ALLOC_CONF");
  // CUDASCOPE_ALLOC_CONF if set, else PYTORCH_CUDA_ALLOC_CONF, else the defaults.
  static AllocatorConfig from_environment();

  // Divisions used to round a request of `size` bytes (0 or 1: plain 512-byte rounding).
  std::size_t divisions_for(std::size_t size) const noexcept {
    const int log_size = 63 - __builtin_clzll(size | 1);
    int index = log_size - 20;  // intervals start at 1 MiB
    if (index < 0) index = 0;
    if (index > static_cast<int>(kRoundupIntervals) - 1) index = static_cast<int>(kRoundupIntervals) - 1;
    return roundup_power2_divisions[static_cast<std::size_t>(index)];
  }
};

}  // namespace cudascope::cuda
