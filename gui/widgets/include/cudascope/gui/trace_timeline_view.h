#pragma once
// The trace timeline: one row per process (header), counter (area) and thread or GPU stream
// (lanes by nesting depth), a time ruler, custom-painted from TimelineIndex so a frame costs
// O(pixels) whatever the trace's size. Events narrower than a pixel merge into hatched runs
// (Tracy's way): nothing is hidden without its spot being marked. Colours come from a
// stable hash of the name, so a kernel keeps its colour across zooms, traces and runs.
//
// Mouse: wheel zooms at the pointer, drag pans, Shift+drag selects a time range, click
// selects an event (a merged run: zooms into it), Shift+wheel or the scroll bar scrolls rows.
// Keys as in Perfetto: W/S zoom in/out, A/D pan, F zooms to the selected event, plus Home
// (everything), Esc (clear); Ctrl+wheel zooms as the wheel does. Names are drawn short
// (analysis/cpp_names.h: "at::native::elementwise_kernel"), the full name on hover and in
// the details. Search matches (setHighlightedNames) are outlined. A row whose events
// overlap deeper than kMaxLanes (thousands of GPU annotations on one stream) shows
// kMaxLanes - 1 lanes and folds the rest into its last lane, with the count in its label;
// hovering the folded lane tells how many events it holds there.
// Hovering a counter shows its value there.
//
// A rank timeline (several rank traces opened together, rank_timeline.h) gets a group
// header band above each rank's processes: "rank N (host)" and how its clock was aligned.

#include <cudascope/gui/trace_document.h>

#include <QImage>
#include <QPointer>
#include <QWidget>

#include <optional>
#include <vector>

class QScrollBar;

namespace cudascope::gui {

class TraceTimelineView : public QWidget {
  Q_OBJECT
 public:
  static constexpr quint32 kNone = UINT32_MAX;
  static constexpr int kLabelWidth = 230, kRulerHeight = 26, kLane = 18, kHeader = 22, kCounter = 42, kGroupHeader = 24;
  static constexpr int kMaxLanes = 12;

  explicit TraceTimelineView(QWidget* parent = nullptr);
  void setDocument(TraceDocument* document);
  TraceDocument* document() const { return doc_; }

  qint64 rangeBegin() const { return t0_; }
  qint64 rangeEnd() const { return t1_; }
  void setRange(qint64 t0, qint64 t1);
  void zoom(double factor, double anchor = 0.5);  // > 1 zooms in; anchor in [0,1] of the plot width
  void pan(double fraction);                      // of the visible span; positive moves later
  void resetZoom();

  // Scrolls rows so that lane `lane` of `row` is a third of the way down the plot.
  void scrollToRow(quint32 row, int lane = 0);
  quint32 selectedEvent() const { return selected_; }
  // Selects an event, scrolls its row into view and, when `reveal`, centres it in time.
  void selectEvent(quint32 event, bool reveal = false);
  std::optional<std::pair<qint64, qint64>> selectedRange() const;
  // Zooms to the selected event (F); false without one.
  bool focusSelection();
  // Outlines events whose name id is in `names` (sorted), e.g. a search's matches.
  void setHighlightedNames(std::vector<std::uint32_t> names);
  // The ruler's ticks as drawn: x and label.
  std::vector<std::pair<double, QString>> rulerLabels() const;
  // Lanes shown for a row (capped at kMaxLanes) and lanes folded into its last one.
  int shownLanes(quint32 row) const;
  int foldedLanes(quint32 row) const;
  void setSelectedRange(qint64 t0, qint64 t1);
  void clearSelectedRange();

  // Geometry: the plot (right of the labels, under the ruler) and each row's top and height.
  QRect plotRect() const;
  int rowTop(quint32 row) const;  // in widget coordinates, scrolled
  int rowHeight(quint32 row) const;
  // A rank timeline: the rank group whose header band sits just above `row` (-1: none).
  int groupHeaderAbove(quint32 row) const;
  // The colour an event of this name is drawn in (a stable hash of the text).
  static QRgb nameColour(std::string_view name);

  // What the last paint drew, for hit testing and tests.
  struct PaintedItem {
    quint32 row = 0;
    QRectF rect;
    analysis::TimelineItem item;
  };
  struct PaintedFlow {
    quint32 flow = 0;
    QPointF from, to;
  };
  const std::vector<PaintedItem>& paintedItems() const { return painted_; }
  const std::vector<PaintedFlow>& paintedFlows() const { return painted_flows_; }
  // Renders the whole view into an image of `size` (what paintEvent draws; benchmarks time it).
  QImage render(QSize size);
  // Tooltip text at a widget point; empty over nothing.
  QString describe(QPoint point) const;

 signals:
  void rangeChanged(qint64 t0, qint64 t1);
  void eventSelected(quint32 event);
  void rangeSelected(qint64 t0, qint64 t1);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  void paintAll(QPainter& p, QSize size);
  void paintRuler(QPainter& p);
  void paintSlices(QPainter& p, const QRect& plot, quint32 row, int top);
  void paintCounter(QPainter& p, const QRect& plot, quint32 row, int top);
  // Merges scratch_'s items from `first` on (the folded lanes') into runs in the last lane.
  void foldItems(std::size_t first, double gap_ns);
  void paintFlows(QPainter& p, const QRect& plot);
  void layoutRows();
  void updateScrollBar();
  double xOf(qint64 t, const QRect& plot) const;
  qint64 timeAt(double x, const QRect& plot) const;
  // The time of `at_event` at the middle of `in_slice`'s lane (either may be kNoEvent).
  std::optional<QPointF> eventAnchor(quint32 at_event, quint32 in_slice, const QRect& plot) const;
  const PaintedItem* itemAt(QPoint point) const;

  QPointer<TraceDocument> doc_;
  qint64 t0_ = 0, t1_ = 1;
  std::vector<int> row_top_;  // unscrolled, from the plot's top
  std::vector<int> group_above_;  // per row: the rank group whose header is drawn above it, -1 none
  int content_height_ = 0;
  qint64 known_end_ = 0;  // the trace's end at the last layout (follow mode)
  QScrollBar* vscroll_;
  quint32 selected_ = kNone;
  qint64 range_a_ = 0, range_b_ = 0;
  bool has_range_ = false;
  enum class Drag { none, pan, range } drag_ = Drag::none;
  QPoint press_at_;
  qint64 press_t0_ = 0, press_t1_ = 0;
  bool moved_ = false;
  std::vector<PaintedItem> painted_;
  std::vector<PaintedFlow> painted_flows_;
  std::vector<analysis::TimelineItem> scratch_;
  mutable std::vector<QRgb> colour_cache_;  // per name id; 0 = not computed
  mutable std::vector<QString> short_names_;  // per name id; null = not computed
  std::vector<std::uint32_t> highlighted_;   // sorted name ids
  QString shortName(std::uint32_t name) const;
};

}  // namespace cudascope::gui
