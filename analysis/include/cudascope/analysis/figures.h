#pragma once
// Figures derived from a snapshot's final state and trace: the numbers `cudascope
// snapshot-stats` prints and the viewer's Figures tab shows. Definitions:
//   reserved   = sum of segment total_size       allocated = sum of segment allocated_size
//   active     = sum of segment active_size      requested = sum of segment requested_size
//   inactive   = sum of inactive block sizes (cached, free)
//   internal fragmentation = sum over allocated blocks of (size - requested_size)
//   external fragmentation = 1 - largest free block / inactive (0 when nothing is free)
//   peak reserved  = the most reserved at any point of the recorded trace: the final state
//                    walked back through segment_alloc/free/map/unmap
//   peak allocated = the most bytes held by live allocations (alloc to free_completed) at any
//                    point of the trace, at the sizes the trace records (the requested size, as
//                    PyTorch and cudascope write it), walked back from the final state's
//                    active blocks at their requested sizes
// Peaks are per device, summed over devices. Without a trace (history not recorded) they are
// the final state's figures.

#include <cudascope/analysis/snapshot.h>

#include <array>
#include <cstdint>
#include <vector>

namespace cudascope::analysis {

struct StreamFigures {
  uint64_t stream = 0;  // raw cudaStream_t value
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t trace_entries = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t active_bytes = 0;
  uint64_t inactive_bytes = 0;
  uint64_t largest_free_block = 0;
};

struct Figures {
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t trace_entries = 0;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t active_bytes = 0;
  uint64_t requested_bytes = 0;
  uint64_t inactive_bytes = 0;
  uint64_t peak_reserved_bytes = 0;
  uint64_t peak_allocated_bytes = 0;
  uint64_t largest_free_block = 0;
  uint64_t internal_fragmentation_bytes = 0;
  double external_fragmentation_ratio = 0.0;
  uint64_t oom_entries = 0;
  std::array<uint64_t, kActionCount> actions{};  // count per Action
  std::vector<StreamFigures> streams;            // ascending raw stream value
  std::vector<int> devices;
};

Figures compute_figures(const Snapshot& snapshot);

}  // namespace cudascope::analysis
