#pragma once
// A snapshot with everything the views index from it, built once off the UI thread and
// then shared read-only (shared_ptr<const LoadedSnapshot>) by every model and view.

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/snapshot.h>
#include <cudascope/analysis/stack_frames.h>
#include <cudascope/analysis/stacked_timeline.h>
#include <cudascope/gui/capped_text.h>

#include <QString>

#include <memory>
#include <string>
#include <vector>

namespace cudascope::gui {

struct LoadedSnapshot {
  std::shared_ptr<const analysis::Snapshot> snapshot;
  analysis::Figures figures;
  int device = 0;  // the device the timelines show
  std::shared_ptr<const analysis::StackedTimeline> allocations;
  std::shared_ptr<const analysis::StackedTimeline> segments;
  // Which frames are hidden (allocator, unwinder) and which is the user frame, per frame.
  std::shared_ptr<const analysis::FrameIndex> frames;
  // Per trace entry: the interval of `allocations` it begins or ends (UINT32_MAX: none).
  std::vector<uint32_t> interval_of_entry;

  // The stack's user frame (what Frame columns show) as frameLabel(frame, true, max_chars)
  // writes it: "name (filename:line)", name and file name each cut to `max_chars`
  // (capped_text.h); empty when the stack has no visible frame.
  QString userFrameText(analysis::StackId stack, qsizetype max_chars = kMaxLabelChars) const;
  // Whether a's user frame comes before b's, by the whole name, then file name (UTF-8 bytes,
  // i.e. code point order), then line number; a stack without one first. The order of Frame
  // columns: it reads the names in place, so no comparison converts a name of any length.
  bool userFrameLess(analysis::StackId a, analysis::StackId b) const;
  // One frame as the viewer shows it: the C++ name shortened (analysis/cpp_names.h) unless
  // `full`, then " (filename:line)" (left out for C++ frames without a source location);
  // name and file name each cut to `max_chars`.
  QString frameLabel(analysis::FrameId frame, bool full = false, qsizetype max_chars = kMaxLabelChars) const;
  // True for a shown frame of C++ library code (the dispatcher, ATen, c10): folded in runs.
  bool dispatcherFrame(analysis::FrameId frame) const;
  // The visible frames, one per line, innermost first, names shortened, runs of two or
  // more C++ library frames folded into one line ("... 5 C++ frames: a ... b"), at most
  // `max_lines` lines (user frames are kept before library ones when cutting), then a line
  // counting the hidden frames; empty for an empty stack.
  QString stackText(analysis::StackId stack, int max_lines = 1 << 20) const;
  // Every frame of the stack, hidden ones included, full names, nothing cut: what "Copy"
  // puts on the clipboard.
  QString fullStackText(analysis::StackId stack) const;
  // The interval of `allocations` live at `address` at the end of the trace, or allocated
  // there by trace entry `entry` (UINT32_MAX: any); UINT32_MAX when none.
  uint32_t intervalAt(uint64_t address, uint32_t entry = UINT32_MAX) const;
};

// Builds the indexes for `device` (the first device with a trace when negative).
std::shared_ptr<const LoadedSnapshot> index_snapshot(analysis::Snapshot&& snapshot, int device = -1);

// The two timelines over event order instead of real time: each trace entry is one step of
// the x axis (memory_viz's default), so idle time takes no width. Intervals keep their
// order and ids, so an interval id means the same allocation on both axes.
struct EventOrderTimelines {
  std::shared_ptr<const analysis::StackedTimeline> allocations;
  std::shared_ptr<const analysis::StackedTimeline> segments;
};
EventOrderTimelines build_event_order_timelines(const LoadedSnapshot& loaded);

}  // namespace cudascope::gui
