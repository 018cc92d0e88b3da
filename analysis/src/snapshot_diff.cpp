#include <cudascope/analysis/snapshot_diff.h>

namespace cudascope::analysis {

SnapshotDiff diff_snapshots(const Snapshot& a, const Snapshot& b) {
  SnapshotDiff d;
  d.a = compute_figures(a);
  d.b = compute_figures(b);
  d.by_user_frame = compare_snapshots(a, b, GroupBy::user_frame);
  d.by_nvtx_range = compare_snapshots(a, b, GroupBy::nvtx_range);
  return d;
}

}  // namespace cudascope::analysis
