#pragma once
// A snapshot with everything the views index from it, built once off the UI thread and
// then shared read-only (shared_ptr<const LoadedSnapshot>) by every model and view.

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/snapshot.h>
#include <cudascope/analysis/stacked_timeline.h>

#include <memory>
#include <string>

namespace cudascope::gui {

struct LoadedSnapshot {
  std::shared_ptr<const analysis::Snapshot> snapshot;
  analysis::Figures figures;
  int device = 0;  // the device the timelines show
  std::shared_ptr<const analysis::StackedTimeline> allocations;
  std::shared_ptr<const analysis::StackedTimeline> segments;
};

// Builds the indexes for `device` (the first device with a trace when negative).
std::shared_ptr<const LoadedSnapshot> index_snapshot(analysis::Snapshot&& snapshot, int device = -1);

}  // namespace cudascope::gui
