#pragma once
// A snapshot's trace as the allocation requests a program made: what `cudascope whatif`
// replays through the caching allocator under other settings.
//
// Conversion, per device:
//   alloc           -> an alloc of the entry's size. PyTorch (every version with a trace) and
//                      cudascope record the size the caller asked for (orig_size), not the
//                      block size; a trace of block sizes replays the same wherever rounding
//                      leaves a block size unchanged (512-byte rounding, power-of-two
//                      divisions), and predicts an upper bound where a block was taken whole.
//   free_completed  -> a free of the block at that address (the block is reusable from here;
//                      a trace with no free_completed at all uses free_requested instead).
//   segment_*, oom, snapshot -> nothing: they are the allocator's own decisions. A run of
//                      segment_free/segment_unmap that no segment_alloc/segment_map/oom
//                      follows (so not a retry, garbage collection or OOM path inside a malloc)
//                      was an empty_cache() call, and becomes one.
// History that does not start at the beginning (a ring buffer that wrapped, recording started
// late): blocks live before the first entry (freed in the trace without an alloc in it, or
// allocated in the final state without one) are assumed allocated first, in address order,
// at their requested size. Segments cached before the trace cannot be recovered and are not
// replayed; `segments_before_trace` counts those the trace or final state shows.
// Thread-safety: pure functions of the snapshot.

#include <cudascope/analysis/snapshot.h>
#include <cudascope/cuda/memory.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct SnapshotRequests {
  int device = 0;
  std::vector<cuda::memory::ReplayRequest> requests;
  // Per request: the absolute trace index it came from; kBeforeTrace for the assumed allocs.
  std::vector<uint32_t> entry;
  static constexpr uint32_t kBeforeTrace = UINT32_MAX;

  uint64_t trace_entries = 0;          // this device's entries
  uint64_t live_at_start = 0;          // blocks assumed allocated before the first entry
  uint64_t live_at_start_bytes = 0;
  uint64_t segments_before_trace = 0;  // segments that existed before the first entry
  uint64_t empty_cache_calls = 0;      // inferred from segment releases outside a malloc
  uint64_t mismatched_entries = 0;     // an alloc over a live block (its free is missing)
  uint64_t streams = 0;
  bool used_free_requested = false;    // the trace had no free_completed
  bool sizes_all_512_aligned = false;  // every alloc size a multiple of 512: maybe block sizes

  // True when the trace covers the program from its first allocation.
  bool complete() const { return live_at_start == 0 && segments_before_trace == 0; }
};

// The requests of `device`'s trace. Throws std::runtime_error naming the snapshot when the
// trace uses more than 65 streams (the replay's limit) or has no entries for `device`.
SnapshotRequests snapshot_requests(const Snapshot& snapshot, int device);

// The device whose trace is longest (the one a what-if is about when none is named); -1
// when no device has trace entries.
int busiest_device(const Snapshot& snapshot);

// The snapshot's own allocator settings in PYTORCH_CUDA_ALLOC_CONF syntax: the recorded
// PYTORCH_CUDA_ALLOC_CONF text when non-empty, else built from the recorded fields
// (max_split_size, garbage_collection_threshold, expandable_segments,
// roundup_power2_divisions); "" (the defaults) when nothing was recorded.
std::string snapshot_alloc_conf(const Snapshot& snapshot);

}  // namespace cudascope::analysis
