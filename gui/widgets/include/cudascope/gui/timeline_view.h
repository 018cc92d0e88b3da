#pragma once
// A stacked memory timeline (active allocations or cached segments) over real time.
// Custom-painted from StackedTimeline, which merges sub-pixel allocations and marks
// churn, so every frame costs the same whatever the zoom. Mouse: wheel zooms at the
// pointer, drag pans, hover shows size, address, stream and stack. Keys: +/- zoom,
// Left/Right pan, Home shows everything.

#include <cudascope/gui/loaded_snapshot.h>

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
  int64_t rangeBegin() const { return t0_; }
  int64_t rangeEnd() const { return t1_; }
  void setRange(int64_t t0, int64_t t1);
  void zoom(double factor, double anchor = 0.5);  // factor > 1 zooms in; anchor in [0,1] of the plot width
  void pan(double fraction);                      // of the visible range; positive moves later
  void resetZoom();
  // The plot area alone, rendered at `size` (what paintEvent draws; benchmarks time it).
  QImage renderPlot(QSize size, std::vector<analysis::TimelineColumn>* columns = nullptr) const;
  // Tooltip text for a point of the plot area, empty over nothing.
  QString describe(QPoint plot_point, QSize plot_size) const;
  QRect plotRect() const;
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

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  analysis::TimelineView viewFor(QSize size) const;

  std::shared_ptr<const LoadedSnapshot> loaded_;
  std::shared_ptr<const analysis::StackedTimeline> timeline_;
  QString title_;
  int64_t t0_ = 0, t1_ = 1;
  bool dragging_ = false;
  QPoint drag_from_;
  int64_t drag_t0_ = 0, drag_t1_ = 1;
};

}  // namespace cudascope::gui
