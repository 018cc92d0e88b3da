#pragma once
// `cudascope diff` on two allocator snapshots: the figures of each (figures.h: peak reserved,
// peak allocated, fragmentation, ...) and what grew between them, grouped by the first user
// frame and by NVTX range (compare.h, the analysis the viewer's Compare tab shows).

#include <cudascope/analysis/compare.h>
#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/snapshot.h>

namespace cudascope::analysis {

struct SnapshotDiff {
  Figures a, b;
  Comparison by_user_frame;  // live memory by first user frame, largest growth first
  Comparison by_nvtx_range;  // live memory by NVTX range, largest growth first
};

// Pure function of the two snapshots; safe to call from any thread.
SnapshotDiff diff_snapshots(const Snapshot& a, const Snapshot& b);

// External fragmentation (figures.h) in percent, as `diff` prints and gates it.
inline double fragmentation_percent(const Figures& f) { return 100.0 * f.external_fragmentation_ratio; }

}  // namespace cudascope::analysis
