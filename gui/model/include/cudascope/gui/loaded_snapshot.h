#pragma once
// A snapshot with everything the views index from it, built once off the UI thread and
// then shared read-only (shared_ptr<const LoadedSnapshot>) by every model and view.

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/snapshot.h>
#include <cudascope/analysis/stack_frames.h>
#include <cudascope/analysis/stacked_timeline.h>

#include <QString>

#include <memory>
#include <string>

namespace cudascope::gui {

struct LoadedSnapshot {
  std::shared_ptr<const analysis::Snapshot> snapshot;
  analysis::Figures figures;
  int device = 0;  // the device the timelines show
  std::shared_ptr<const analysis::StackedTimeline> allocations;
  std::shared_ptr<const analysis::StackedTimeline> segments;
  // Which frames are hidden (allocator, unwinder) and which is the user frame, per frame.
  std::shared_ptr<const analysis::FrameIndex> frames;

  // "name (filename:line)" of the stack's user frame (what Frame columns show); empty when
  // the stack has no visible frame.
  QString userFrameText(analysis::StackId stack) const;
  // The visible frames, one per line, innermost first, at most `max_frames` of them, then a
  // line counting the rest and one counting the hidden frames; empty for an empty stack.
  QString stackText(analysis::StackId stack, int max_frames = 1 << 20) const;
};

// Builds the indexes for `device` (the first device with a trace when negative).
std::shared_ptr<const LoadedSnapshot> index_snapshot(analysis::Snapshot&& snapshot, int device = -1);

}  // namespace cudascope::gui
