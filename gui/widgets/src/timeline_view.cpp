#include <cudascope/gui/timeline_view.h>

#include "time_window.h"

#include <cudascope/gui/record_table_model.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace cudascope::gui {
namespace {
constexpr int kLeft = 78, kRight = 12, kTop = 26, kBottom = 34, kChurn = 5;
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
  resetZoom();
}

void TimelineView::resetZoom() {
  if (timeline_) setRange(timeline_->begin_us(), timeline_->end_us());
}

void TimelineView::setRange(int64_t t0, int64_t t1) {
  if (timeline_) {
    // Never narrower than 10 us, never wider than the trace (with a small margin).
    const int64_t span = std::max<int64_t>(t1 - t0, 10);
    const int64_t lo = timeline_->begin_us(), hi = timeline_->end_us();
    const int64_t max_span = (hi - lo) + (hi - lo) / 50 + 10;
    t1 = t0 + std::min(span, max_span);
    if (t0 < lo - (hi - lo) / 100) t1 += (lo - (hi - lo) / 100) - t0, t0 = lo - (hi - lo) / 100;
    if (t1 > hi + (hi - lo) / 100) t0 -= t1 - (hi + (hi - lo) / 100), t1 = hi + (hi - lo) / 100;
  }
  t0_ = t0;
  t1_ = std::max(t1, t0 + 1);
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

QRect TimelineView::plotRect() const {
  return QRect(kLeft, kTop, std::max(1, width() - kLeft - kRight), std::max(1, height() - kTop - kBottom - kChurn));
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

  // OOM entries of this device: red lines.
  const auto& snap = *loaded_->snapshot;
  const double us_per_px = double(t1_ - t0_) / plot.width();
  p.setPen(QPen(QColor(230, 40, 40), 1));
  for (const auto& [index, free] : snap.oom_device_free) {
    const auto& e = snap.trace[index];
    if (e.device != loaded_->device || e.time_us < t0_ || e.time_us > t1_) continue;
    const int x = plot.left() + int(double(e.time_us - t0_) / us_per_px);
    p.drawLine(x, plot.top(), x, plot.bottom());
  }

  // Axes: bytes on the left, milliseconds since the trace start at the bottom.
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
  const int ticks = std::max(2, plot.width() / 120);
  for (int i = 0; i <= ticks; ++i) {
    const int x = plot.left() + plot.width() * i / ticks;
    const double ms = (double(t0_ - timeline_->begin_us()) + double(t1_ - t0_) * i / ticks) / 1000.0;
    const QString text = QString::number(ms, 'f', ms < 10 ? 3 : 1) + " ms";
    const int w = metrics.horizontalAdvance(text) + 6;
    // Centred under its tick, but moved inwards at the edges so no label is clipped.
    QRect r(x - w / 2, y, w, metrics.height());
    if (r.right() > width() - 2) r.moveRight(width() - 2);
    if (r.left() < 2) r.moveLeft(2);
    labels.push_back({x, r, text});
  }
  return labels;
}

QString TimelineView::describe(QPoint pt, QSize size) const {
  if (!timeline_) return {};
  const auto hit = timeline_->hit(viewFor(size), pt.x(), pt.y());
  if (!hit) return {};
  const auto& snap = *loaded_->snapshot;
  const auto& intervals = timeline_->intervals();
  if (hit->merged) {
    uint64_t largest = 0;
    for (uint32_t id : hit->intervals) largest = std::max(largest, intervals[id].size);
    return QStringLiteral("%1 allocations merged at this zoom: %2 (largest %3)\nzoom in to see each one")
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
  text += iv.begin_entry == UINT32_MAX ? QStringLiteral("allocated before the trace\n")
                                       : QStringLiteral("from %1 ms").arg(double(iv.begin_us - timeline_->begin_us()) / 1000.0, 0, 'f', 3);
  if (iv.begin_entry != UINT32_MAX)
    text += iv.end_entry == UINT32_MAX ? QStringLiteral(", live at the end\n")
                                       : QStringLiteral(" to %1 ms\n").arg(double(iv.end_us - timeline_->begin_us()) / 1000.0, 0, 'f', 3);
  const QString stack = loaded_->stackText(iv.stack, 12);
  if (!stack.isEmpty()) text += "  " + QString(stack).replace('\n', "\n  ");
  return text.trimmed();
}

void TimelineView::wheelEvent(QWheelEvent* e) {
  const QRect plot = plotRect();
  const double anchor = std::clamp((e->position().x() - plot.left()) / double(plot.width()), 0.0, 1.0);
  zoom(std::pow(1.25, e->angleDelta().y() / 120.0), anchor);
  e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton) {
    dragging_ = true;
    drag_from_ = e->position().toPoint();
    drag_t0_ = t0_, drag_t1_ = t1_;
  }
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QRect plot = plotRect();
  if (dragging_) {
    const double dx = e->position().x() - drag_from_.x();
    const auto d = static_cast<int64_t>(-dx / plot.width() * double(drag_t1_ - drag_t0_));
    setRange(drag_t0_ + d, drag_t1_ + d);
    return;
  }
  const QPoint pt = e->position().toPoint() - plot.topLeft();
  const QString text = plot.contains(e->position().toPoint()) ? describe(pt, plot.size()) : QString();
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(e->globalPosition().toPoint(), text, this);
}

void TimelineView::mouseReleaseEvent(QMouseEvent*) { dragging_ = false; }

void TimelineView::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoom(1.5); break;
    case Qt::Key_Minus: zoom(1 / 1.5); break;
    case Qt::Key_Left: pan(-0.2); break;
    case Qt::Key_Right: pan(0.2); break;
    case Qt::Key_Home: resetZoom(); break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
}

}  // namespace cudascope::gui
