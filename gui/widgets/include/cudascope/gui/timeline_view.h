#pragma once
// A stacked memory timeline (active allocations or cached segments) over real time or over
// event order (one step per trace entry, as memory_viz draws it). Custom-painted from
// StackedTimeline, which merges sub-pixel allocations and marks churn, so every frame costs
// the same whatever the zoom.
//
// Mouse: click an allocation to select it (intervalClicked; a merged run zooms in), click
// an OOM marker to select its entry (entryClicked), wheel or Ctrl+wheel zooms at the
// pointer, Shift+wheel pans, drag pans; hover shows size, address, stream and a short stack.
// Keys as in Perfetto and the trace view: W/S (or +/-) zoom, A/D (or Left/Right) pan,
// F zooms to the selection, Home shows everything.
//
// The selected allocation (setSelection) is drawn as a band over its lifetime; OOM entries
// of the shown device as red markers with a flag on top.

#include <cudascope/gui/snapshot_selection.h>

#include <QImage>
#include <QWidget>

#include <memory>
#include <vector>

namespace cudascope::gui {

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);

  void setTimeline(std::shared_ptr<const LoadedSnapshot> loaded, std::shared_ptr<const analysis::StackedTimeline> timeline,
                   const QString& title);
  // The x axis: real time (microseconds) or event order (the timeline was built over entry
  // indices: build_event_order_timelines()). Keeps the current window when `keep_range`.
  void setAxis(SnapshotSelection::Axis axis, std::shared_ptr<const analysis::StackedTimeline> timeline);
  SnapshotSelection::Axis axis() const { return axis_; }
  const std::shared_ptr<const analysis::StackedTimeline>& timeline() const { return timeline_; }
  int64_t rangeBegin() const { return t0_; }
  int64_t rangeEnd() const { return t1_; }
  void setRange(int64_t t0, int64_t t1);
  void zoom(double factor, double anchor = 0.5);  // factor > 1 zooms in; anchor in [0,1] of the plot width
  void pan(double fraction);                      // of the visible range; positive moves later
  void resetZoom();
  // Zooms so the selection's lifetime fills the middle of the view (false without one).
  bool focusSelection();
  void setSelection(const MemorySelection& selection);
  // The plot area alone, rendered at `size` (what paintEvent draws; benchmarks time it).
  QImage renderPlot(QSize size, std::vector<analysis::TimelineColumn>* columns = nullptr) const;
  // Tooltip text for a point of the plot area, empty over nothing.
  QString describe(QPoint plot_point, QSize plot_size) const;
  QRect plotRect() const;
  // The x (widget coordinates) of a time or entry of the current axis.
  double xOf(int64_t t) const;
  // The trace entries of OOM markers (this device) and each marker's x; the OOM entry
  // under `plot_point` (within a few pixels), or -1.
  int64_t oomAt(QPoint plot_point) const;
  // The time axis under the plot: each tick's x and its label's text and box (kept inside
  // the widget at both ends).
  struct AxisLabel {
    int tick_x = 0;
    QRect rect;
    QString text;
  };
  std::vector<AxisLabel> timeAxisLabels() const;

 signals:
  void rangeChanged(qint64 t0, qint64 t1);
  void intervalClicked(quint32 interval);
  void entryClicked(quint32 entry);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  analysis::TimelineView viewFor(QSize size) const;
  // An entry's position on the current axis.
  int64_t entryPosition(uint32_t entry) const;

  std::shared_ptr<const LoadedSnapshot> loaded_;
  std::shared_ptr<const analysis::StackedTimeline> timeline_;
  SnapshotSelection::Axis axis_ = SnapshotSelection::Axis::time;
  MemorySelection selection_;
  QString title_;
  int64_t t0_ = 0, t1_ = 1;
  bool dragging_ = false, moved_ = false;
  QPoint drag_from_;
  int64_t drag_t0_ = 0, drag_t1_ = 1;
};

}  // namespace cudascope::gui
