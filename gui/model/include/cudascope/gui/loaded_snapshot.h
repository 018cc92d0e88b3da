#pragma once
// A snapshot with everything the views index from it, built once off the UI thread and
// then shared read-only (shared_ptr<const LoadedSnapshot>) by every model and view.

#include <cudascope/snapshot/figures.h>
#include <cudascope/snapshot/snapshot.h>
#include <cudascope/snapshot/stacked_timeline.h>

#include <memory>
#include <string>

namespace cudascope::gui {

struct LoadedSnapshot {
  std::shared_ptr<const snapshot::Snapshot> snapshot;
  snapshot::Figures figures;
  int device = 0;  // the device the timelines show
  std::shared_ptr<const snapshot::StackedTimeline> allocations;
  std::shared_ptr<const snapshot::StackedTimeline> segments;
};

// Builds the indexes for `device` (the first device with a trace when negative).
std::shared_ptr<const LoadedSnapshot> index_snapshot(snapshot::Snapshot&& snapshot, int device = -1);

}  // namespace cudascope::gui
