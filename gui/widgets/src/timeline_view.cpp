#include <cudascope/gui/timeline_view.h>

#include "axis_ticks.h"
#include "time_window.h"

#include <cudascope/gui/record_table_model.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace cudascope::gui {
namespace {
constexpr int kLeft = 78, kRight = 12, kTop = 26, kBottom = 34, kChurn = 5, kOomHit = 6;
const QColor kOom(235, 45, 45), kSelectionBand(255, 255, 255, 46), kSelectionEdge(255, 255, 255);
}

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(320, 200);
}

void TimelineView::setTimeline(std::shared_ptr<const LoadedSnapshot> loaded,
                               std::shared_ptr<const analysis::StackedTimeline> timeline, const QString& title) {
  loaded_ = std::move(loaded);
  timeline_ = std::move(timeline);
  title_ = title;
  axis_ = SnapshotSelection::Axis::time;
  selection_ = {};
  resetZoom();
}

void TimelineView::setAxis(SnapshotSelection::Axis axis, std::shared_ptr<const analysis::StackedTimeline> timeline) {
  axis_ = axis;
  timeline_ = std::move(timeline);
  resetZoom();
}

void TimelineView::resetZoom() {
  // A margin on both sides, so a marker on the last entry (an OOM) is not on the edge.
  if (timeline_) {
    const int64_t b = timeline_->begin_us(), e = timeline_->end_us(), m = std::max<int64_t>((e - b) / 60, 1);
    setRange(b - m, e + m);
  }
}

void TimelineView::setRange(int64_t t0, int64_t t1) {
  if (timeline_) {
    // Never narrower than 10 units, never wider than the trace (with a small margin).
    const int64_t span = std::max<int64_t>(t1 - t0, 10);
    const int64_t lo = timeline_->begin_us(), hi = timeline_->end_us();
    const int64_t margin = (hi - lo) / 50 + 1;
    const int64_t max_span = (hi - lo) + 2 * margin + 10;
    t1 = t0 + std::min(span, max_span);
    if (t0 < lo - margin) t1 += (lo - margin) - t0, t0 = lo - margin;
    if (t1 > hi + margin) t0 -= t1 - (hi + margin), t1 = hi + margin;
  }
  t1 = std::max(t1, t0 + 1);
  if (t0 == t0_ && t1 == t1_) return;
  t0_ = t0;
  t1_ = t1;
  emit rangeChanged(t0_, t1_);
  update();
}

void TimelineView::zoom(double factor, double anchor) {
  const auto [t0, t1] = detail::zoomed_window(t0_, t1_, factor, anchor);
  setRange(t0, t1);
}

void TimelineView::pan(double fraction) {
  const auto d = static_cast<int64_t>(double(t1_ - t0_) * fraction);
  setRange(t0_ + d, t1_ + d);
}

int64_t TimelineView::entryPosition(uint32_t entry) const {
  if (axis_ == SnapshotSelection::Axis::event_order || !loaded_) return int64_t(entry);
  return loaded_->snapshot->trace[entry].time_us;
}

void TimelineView::setSelection(const MemorySelection& selection) {
  selection_ = selection;
  update();
}

bool TimelineView::focusSelection() {
  if (!selection_.valid || !timeline_ || !loaded_) return false;
  const int64_t b = selection_.entry == UINT32_MAX ? timeline_->begin_us() : entryPosition(selection_.entry);
  const int64_t e = selection_.end_entry == UINT32_MAX ? timeline_->end_us() : entryPosition(selection_.end_entry);
  const int64_t pad = std::max<int64_t>((e - b) / 4, 20);
  setRange(b - pad, e + pad);
  return true;
}

QRect TimelineView::plotRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom - kChurn));
}

double TimelineView::xOf(int64_t t) const {
  const QRect plot = plotRect();
  return plot.left() + double(t - t0_) * plot.width() / double(t1_ - t0_);
}

analysis::TimelineView TimelineView::viewFor(QSize size) const {
  analysis::TimelineView v;
  v.t0 = t0_;
  v.t1 = t1_;
  v.bytes_max = timeline_ ? std::max<uint64_t>(timeline_->peak_bytes() + timeline_->peak_bytes() / 20, 1) : 1;
  v.width = std::max(1, size.width());
  v.height = std::max(1, size.height());
  return v;
}

QImage TimelineView::renderPlot(QSize size, std::vector<analysis::TimelineColumn>* columns) const {
  QImage image(size, QImage::Format_ARGB32);
  if (!timeline_) {
    image.fill(QColor::fromRgba(analysis::StackedTimeline::kBackground));
    return image;
  }
  timeline_->render(viewFor(size), reinterpret_cast<uint32_t*>(image.bits()), int(image.bytesPerLine() / 4), columns);
  return image;
}

int64_t TimelineView::oomAt(QPoint pt) const {
  if (!loaded_ || !timeline_) return -1;
  const QRect plot = plotRect();
  for (const auto& [index, free] : loaded_->snapshot->oom_device_free) {
    if (loaded_->snapshot->trace[index].device != loaded_->device) continue;
    const double x = xOf(entryPosition(index)) - plot.left();
    if (std::fabs(x - pt.x()) <= kOomHit) return int64_t(index);
  }
  return -1;
}

void TimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  const QRect plot = plotRect();
  std::vector<analysis::TimelineColumn> columns;
  p.drawImage(plot.topLeft(), renderPlot(plot.size(), &columns));
  p.setPen(palette().windowText().color());
  p.drawText(QRect(kLeft, 4, width() - kLeft, kTop - 6), Qt::AlignLeft | Qt::AlignVCenter,
             timeline_ ? title_ + QStringLiteral("   peak %1   %2 intervals").arg(formatBytes(timeline_->peak_bytes()))
                                     .arg(timeline_->intervals().size())
                       : QStringLiteral("No snapshot loaded"));
  if (!timeline_) return;

  // Churn strip: intervals that came and went inside a column (merged, not dropped).
  const int churn_y = plot.bottom() + 2;
  for (int x = 0; x < int(columns.size()); ++x)
    if (columns[size_t(x)].churn > 0) {
      const int shade = std::min(255, 80 + int(40 * std::log2(1.0 + columns[size_t(x)].churn)));
      p.fillRect(plot.left() + x, churn_y, 1, kChurn - 1, QColor(shade, shade, 60));
    }

  p.setClipRect(plot);
  // The selected allocation: a band over its lifetime with bright edges.
  if (selection_.valid) {
    const int64_t b = selection_.entry == UINT32_MAX ? timeline_->begin_us() : entryPosition(selection_.entry);
    const int64_t e = selection_.end_entry == UINT32_MAX ? timeline_->end_us() : entryPosition(selection_.end_entry);
    const double xa = xOf(b), xb = std::max(xOf(e), xa + 1);
    p.fillRect(QRectF(xa, plot.top(), xb - xa, plot.height()), kSelectionBand);
    p.setPen(QPen(kSelectionEdge, 1, Qt::DashLine));
    p.drawLine(QPointF(xa, plot.top()), QPointF(xa, plot.bottom()));
    p.drawLine(QPointF(xb, plot.top()), QPointF(xb, plot.bottom()));
  }

  // OOM entries of this device: a 3-pixel red line and a flag at the top, hover for details.
  const auto& snap = *loaded_->snapshot;
  for (const auto& [index, free] : snap.oom_device_free) {
    const auto& e = snap.trace[index];
    if (e.device != loaded_->device) continue;
    const double x = xOf(entryPosition(index));
    if (x < plot.left() - 40 || x > plot.right() + 40) continue;
    p.fillRect(QRectF(x - 1, plot.top(), 3, plot.height()), kOom);
    QPainterPath flag;
    flag.moveTo(x, plot.top());
    flag.lineTo(x - 7, plot.top() + 12);
    flag.lineTo(x + 7, plot.top() + 12);
    flag.closeSubpath();
    p.fillPath(flag, kOom);
    p.setPen(Qt::white);
    const QString label = tr("OOM: asked %1").arg(formatBytes(e.size));
    const int w = p.fontMetrics().horizontalAdvance(label) + 8;
    const QRectF box(std::max<double>(plot.left(), std::min<double>(x - w - 4, plot.right() - w)), plot.top() + 14, w, 18);
    p.fillRect(box, kOom);
    p.drawText(box, Qt::AlignCenter, label);
  }
  p.setClipping(false);

  // Axes: bytes on the left, time (or entries) since the trace start at the bottom.
  p.setPen(palette().windowText().color());
  const uint64_t bytes_max = viewFor(plot.size()).bytes_max;
  for (int i = 0; i <= 4; ++i) {
    const int y = plot.bottom() - plot.height() * i / 4;
    p.drawLine(plot.left() - 4, y, plot.left(), y);
    p.drawText(QRect(0, y - 8, kLeft - 8, 16), Qt::AlignRight | Qt::AlignVCenter, formatBytes(bytes_max * uint64_t(i) / 4));
  }
  for (const AxisLabel& label : timeAxisLabels()) {
    p.drawLine(label.tick_x, churn_y + kChurn, label.tick_x, churn_y + kChurn + 4);
    p.drawText(label.rect, Qt::AlignCenter, label.text);
  }
}

std::vector<TimelineView::AxisLabel> TimelineView::timeAxisLabels() const {
  std::vector<AxisLabel> labels;
  if (!timeline_) return labels;
  const QRect plot = plotRect();
  const QFontMetrics metrics = fontMetrics();
  const int y = plot.bottom() + 2 + kChurn + 4;
  const bool order = axis_ == SnapshotSelection::Axis::event_order;
  // Ticks on round values of the axis; the step (and so each label's precision) from the
  // zoom, so neighbouring labels always differ.
  const double per_px = double(t1_ - t0_) / plot.width();
  const double step = order ? std::max(1.0, detail::nice_step(per_px * 120)) : detail::nice_step(per_px * 120 * 1000) / 1000;
  const int64_t origin = order ? 0 : timeline_->begin_us();
  const double first = std::ceil(double(t0_ - origin) / step) * step;
  for (double v = first; origin + v <= double(t1_); v += step) {
    const int x = int(std::lround(xOf(int64_t(std::llround(origin + v)))));
    const QString text = order ? QStringLiteral("entry %1").arg(qint64(std::llround(v)))
                               : detail::tick_label_ns(v * 1000.0, step * 1000.0);
    const int w = metrics.horizontalAdvance(text) + 6;
    // Centred under its tick, but moved inwards at the edges so no label is clipped.
    QRect r(x - w / 2, y, w, metrics.height());
    if (r.right() > width() - 2) r.moveRight(width() - 2);
    if (r.left() < 2) r.moveLeft(2);
    if (!labels.empty() && r.left() < labels.back().rect.right() + 4) continue;
    labels.push_back({x, r, text});
  }
  return labels;
}

QString TimelineView::describe(QPoint pt, QSize size) const {
  if (!timeline_) return {};
  const auto& snap = *loaded_->snapshot;
  if (const int64_t oom = oomAt(pt); oom >= 0) {
    const auto& e = snap.trace[size_t(oom)];
    uint64_t free = 0;
    for (const auto& [index, f] : snap.oom_device_free)
      if (index == uint64_t(oom)) free = f;
    QString text = tr("OUT OF MEMORY (trace entry %1)\nasked %2 on stream %3; %4 free on the device\n")
                       .arg(oom)
                       .arg(formatBytes(e.size), formatAddress(snap.stream_value(e.stream)), formatBytes(free));
    const QString stack = loaded_->stackText(e.stack, 10);
    if (!stack.isEmpty()) text += "  " + QString(stack).replace('\n', "\n  ") + "\n";
    return (text + tr("click to pin it")).trimmed();
  }
  const auto hit = timeline_->hit(viewFor(size), pt.x(), pt.y());
  if (!hit) return {};
  const auto& intervals = timeline_->intervals();
  if (hit->merged) {
    uint64_t largest = 0;
    for (uint32_t id : hit->intervals) largest = std::max(largest, intervals[id].size);
    return QStringLiteral("%1 allocations merged at this zoom: %2 (largest %3)\nclick or zoom in to see each one")
        .arg(hit->intervals.size())
        .arg(formatBytes(hit->bytes))
        .arg(formatBytes(largest));
  }
  const auto& iv = intervals[hit->intervals.front()];
  QString text = QStringLiteral("%1 (%2 bytes)\naddress %3\nstream %4\n")
                     .arg(formatBytes(iv.size))
                     .arg(iv.size)
                     .arg(formatAddress(iv.address))
                     .arg(formatAddress(snap.stream_value(iv.stream)));
  auto at = [&](uint32_t entry) {
    return axis_ == SnapshotSelection::Axis::event_order
               ? QStringLiteral("entry %1").arg(entry)
               : QStringLiteral("%1 ms").arg(double(snap.trace[entry].time_us - loaded_->allocations->begin_us()) / 1000.0, 0, 'f', 3);
  };
  text += iv.begin_entry == UINT32_MAX ? QStringLiteral("allocated before the trace\n") : QStringLiteral("from %1").arg(at(iv.begin_entry));
  if (iv.begin_entry != UINT32_MAX)
    text += iv.end_entry == UINT32_MAX ? QStringLiteral(", live at the end\n") : QStringLiteral(" to %1\n").arg(at(iv.end_entry));
  const QString stack = loaded_->stackText(iv.stack, 8);
  if (!stack.isEmpty()) text += "  " + QString(stack).replace('\n', "\n  ") + "\n";
  return (text + tr("click to pin its stack")).trimmed();
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const QRect plot = plotRect();
  if (e->modifiers() & Qt::ShiftModifier) {
    pan(-e->angleDelta().y() / 120.0 * 0.1);
  } else {  // plain or Ctrl+wheel (Perfetto's) zooms at the pointer
    const double anchor = std::clamp((e->position().x() - plot.left()) / double(plot.width()), 0.0, 1.0);
    zoom(std::pow(1.25, e->angleDelta().y() / 120.0), anchor);
  }
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton) {
    dragging_ = true;
    moved_ = false;
    drag_from_ = e->position().toPoint();
    drag_t0_ = t0_, drag_t1_ = t1_;
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QRect plot = plotRect();
  if (dragging_) {
    const double dx = e->position().x() - drag_from_.x();
    if (std::fabs(dx) > 3) moved_ = true;
    if (!moved_) return;
    const auto d = static_cast<int64_t>(-dx / plot.width() * double(drag_t1_ - drag_t0_));
    setRange(drag_t0_ + d, drag_t1_ + d);
    return;
  }
  const QPoint pt = e->position().toPoint() - plot.topLeft();
  const QString text = plot.contains(e->position().toPoint()) ? describe(pt, plot.size()) : QString();
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(e->globalPosition().toPoint(), text, this);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const bool click = dragging_ && !moved_;
  dragging_ = false;
  if (!click || !timeline_) return;
  const QRect plot = plotRect();
  if (!plot.contains(e->position().toPoint())) return;
  const QPoint pt = e->position().toPoint() - plot.topLeft();
  if (const int64_t oom = oomAt(pt); oom >= 0) {
    emit entryClicked(quint32(oom));
    return;
  }
  const auto hit = timeline_->hit(viewFor(plot.size()), pt.x(), pt.y());
  if (!hit) return;
  if (hit->merged) {  // zoom into the run
    const auto& intervals = timeline_->intervals();
    int64_t b = INT64_MAX, en = INT64_MIN;
    for (uint32_t id : hit->intervals) b = std::min(b, intervals[id].begin_us), en = std::max(en, intervals[id].end_us);
    const double at = double(pt.x()) / plot.width();
    zoom(std::max(2.0, double(t1_ - t0_) / double(std::max<int64_t>(en - b, 10)) / 2), at);
    return;
  }
  emit intervalClicked(hit->intervals.front());
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom(1.5); break;
    case Qt::Key_S:
    case Qt::Key_Minus: zoom(1 / 1.5); break;
    case Qt::Key_A:
    case Qt::Key_Left: pan(-0.2); break;
    case Qt::Key_D:
    case Qt::Key_Right: pan(0.2); break;
    case Qt::Key_F: focusSelection(); break;
    case Qt::Key_Home: resetZoom(); break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
}

}  // namespace cudascope::gui
