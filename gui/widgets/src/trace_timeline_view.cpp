#include <cudascope/gui/trace_timeline_view.h>

#include "axis_ticks.h"
#include "time_window.h"

#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/event_details_model.h>

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <climits>
#include <cmath>

namespace cudascope::gui {
namespace {

const QColor kBackground(0x1e, 0x1e, 0x24), kRowEven(0x23, 0x23, 0x2a), kRowOdd(0x1f, 0x1f, 0x25);
const QColor kHeaderBg(0x34, 0x34, 0x40), kLabelBg(0x2a, 0x2a, 0x32), kText(0xe6, 0xe6, 0xea), kDim(0x9a, 0x9a, 0xa6);
const QColor kGroupBg(0x2c, 0x3a, 0x52);
const QColor kGrid(0x3a, 0x3a, 0x44), kMerged(0x6a, 0x6a, 0x78), kSelection(0xff, 0xff, 0xff), kFlow(0xff, 0xc8, 0x3c);

}  // namespace

TraceTimelineView::TraceTimelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(480, 240);
  setAttribute(Qt::WA_OpaquePaintEvent);
  vscroll_ = new QScrollBar(Qt::Vertical, this);
  connect(vscroll_, &QScrollBar::valueChanged, this, qOverload<>(&QWidget::update));
}

void TraceTimelineView::setDocument(TraceDocument* document) {
  doc_ = document;
  selected_ = kNone;
  has_range_ = false;
  colour_cache_.clear();
  short_names_.clear();
  highlighted_.clear();
  layoutRows();
  if (doc_) {
    connect(doc_, &TraceDocument::rebuilt, this, [this] {
      // A rank timeline merged again: event and name ids changed (the range and scroll are
      // times and pixels: they stay). The selection and outlines named old ids: dropped.
      colour_cache_.clear();
      short_names_.clear();
      highlighted_.clear();
      if (selected_ != kNone) {
        selected_ = kNone;
        emit eventSelected(kNone);
      }
    });
    connect(doc_, &TraceDocument::grew, this, [this] {
      // Follow mode: a view showing the end keeps showing it (same span) as the trace grows;
      // a view the user moved elsewhere stays put.
      const bool at_end = t1_ >= known_end_;
      layoutRows();
      const qint64 end = doc_->index().end_ns();
      if (at_end && end > t1_) setRange(end - (t1_ - t0_) + (t1_ - t0_) / 50, end + (t1_ - t0_) / 50);
      update();
    });
  }
  resetZoom();
}

void TraceTimelineView::layoutRows() {
  row_top_.clear();
  group_above_.clear();
  int y = 0;
  if (doc_) {
    int group = -1;
    for (quint32 r = 0; r < doc_->index().rows().size(); ++r) {
      const int g = doc_->rankGroupOfRow(r);
      group_above_.push_back(g >= 0 && g != group ? g : -1);
      if (g >= 0 && g != group) y += kGroupHeader;  // a rank's header band
      group = g;
      row_top_.push_back(y);
      y += rowHeight(r);
    }
  }
  content_height_ = y;
  known_end_ = doc_ ? doc_->index().end_ns() : 0;
  updateScrollBar();
}

void TraceTimelineView::updateScrollBar() {
  const QRect plot = plotRect();
  vscroll_->setGeometry(width() - vscroll_->sizeHint().width(), kRulerHeight, vscroll_->sizeHint().width(),
                        std::max(0, height() - kRulerHeight));
  vscroll_->setRange(0, std::max(0, content_height_ - plot.height()));
  vscroll_->setPageStep(plot.height());
  vscroll_->setSingleStep(kLane);
  vscroll_->setVisible(content_height_ > plot.height());
}

void TraceTimelineView::resizeEvent(QResizeEvent*) { updateScrollBar(); }

QRect TraceTimelineView::plotRect() const {
  const int scroll = vscroll_->sizeHint().width();
  return QRect(kLabelWidth, kRulerHeight, std::max(1, width() - kLabelWidth - scroll), std::max(1, height() - kRulerHeight));
}

int TraceTimelineView::rowHeight(quint32 row) const {
  if (!doc_ || row >= doc_->index().rows().size()) return 0;
  const auto& r = doc_->index().rows()[row];
  switch (r.kind) {
    case analysis::TimelineRow::Kind::process: return kHeader;
    case analysis::TimelineRow::Kind::counter: return kCounter;
    case analysis::TimelineRow::Kind::slices: return std::min<int>(r.lanes, kMaxLanes) * kLane + 6;
  }
  return 0;
}

int TraceTimelineView::shownLanes(quint32 row) const {
  if (!doc_ || row >= doc_->index().rows().size()) return 0;
  return std::min<int>(doc_->index().rows()[row].lanes, kMaxLanes);
}

int TraceTimelineView::foldedLanes(quint32 row) const {
  if (!doc_ || row >= doc_->index().rows().size()) return 0;
  const int lanes = doc_->index().rows()[row].lanes;
  return lanes > kMaxLanes ? lanes - (kMaxLanes - 1) : 0;
}

QString TraceTimelineView::shortName(std::uint32_t name) const {
  if (short_names_.size() <= name) short_names_.resize(std::max<std::size_t>(name + 1, doc_->model().strings().size()));
  QString& s = short_names_[name];
  if (s.isNull()) s = doc_->shortName(name, kMaxLabelChars);
  return s;
}

void TraceTimelineView::setHighlightedNames(std::vector<std::uint32_t> names) {
  std::sort(names.begin(), names.end());
  highlighted_ = std::move(names);
  update();
}

bool TraceTimelineView::focusSelection() {
  if (!doc_ || selected_ == kNone) return false;
  const auto& e = doc_->model().event(selected_);
  const qint64 dur = std::max<qint64>(e.dur_ns, 0), pad = std::max<qint64>(dur / 2, 500);
  setRange(e.ts_ns - pad, e.ts_ns + dur + pad);
  return true;
}

int TraceTimelineView::groupHeaderAbove(quint32 row) const { return row < group_above_.size() ? group_above_[row] : -1; }

int TraceTimelineView::rowTop(quint32 row) const {
  return row < row_top_.size() ? plotRect().top() + row_top_[row] - vscroll_->value() : -1;
}

void TraceTimelineView::resetZoom() {
  if (!doc_) return;
  const qint64 b = doc_->index().begin_ns(), e = std::max<qint64>(doc_->index().end_ns(), b + 1000);
  const qint64 margin = (e - b) / 50;
  setRange(b - margin, e + margin);
}

void TraceTimelineView::setRange(qint64 t0, qint64 t1) {
  if (doc_) {
    const qint64 b = doc_->index().begin_ns(), e = std::max<qint64>(doc_->index().end_ns(), b + 1000);
    const qint64 max_span = (e - b) + (e - b) / 5 + 1000;
    const qint64 span = std::clamp<qint64>(t1 - t0, 20, max_span);
    t1 = t0 + span;
    const qint64 lo = b - (e - b) / 10 - 500, hi = e + (e - b) / 10 + 500;
    if (t0 < lo) t0 = lo, t1 = lo + span;
    if (t1 > hi) t1 = hi, t0 = hi - span;
  }
  t0_ = t0;
  t1_ = std::max(t1, t0 + 1);
  emit rangeChanged(t0_, t1_);
  update();
}

void TraceTimelineView::zoom(double factor, double anchor) {
  const auto [t0, t1] = detail::zoomed_window(t0_, t1_, factor, anchor);
  setRange(t0, t1);
}

void TraceTimelineView::pan(double fraction) {
  const auto d = qint64(double(t1_ - t0_) * fraction);
  setRange(t0_ + d, t1_ + d);
}

double TraceTimelineView::xOf(qint64 t, const QRect& plot) const {
  return plot.left() + double(t - t0_) * plot.width() / double(t1_ - t0_);
}

qint64 TraceTimelineView::timeAt(double x, const QRect& plot) const {
  return t0_ + qint64((x - plot.left()) * double(t1_ - t0_) / plot.width());
}

QRgb TraceTimelineView::nameColour(std::string_view name) {
  // FNV-1a: stable across runs and platforms (std::hash is not).
  quint32 h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  const int hue = int(h % 360);
  const int sat = 110 + int((h >> 9) % 70);
  const int val = 190 + int((h >> 17) % 45);
  return QColor::fromHsv(hue, sat, val).rgb();
}

void TraceTimelineView::selectEvent(quint32 event, bool reveal) {
  selected_ = doc_ && event < doc_->model().event_count() ? event : kNone;
  if (selected_ != kNone && reveal) {
    const auto& e = doc_->model().event(selected_);
    const qint64 span = t1_ - t0_;
    if (e.ts_ns < t0_ || e.end_ns() > t1_) {
      const qint64 mid = e.ts_ns + std::max<qint64>(e.dur_ns, 0) / 2;
      const qint64 want = std::max(span, std::max<qint64>(e.dur_ns, 0) * 3);
      setRange(mid - want / 2, mid + want / 2);
    }
    const quint32 row = doc_->index().row_of_track(e.track);
    if (row < row_top_.size()) {
      const int y = row_top_[row] + e.depth * kLane;
      if (y < vscroll_->value() || y + kLane > vscroll_->value() + plotRect().height()) scrollToRow(row, e.depth);
    }
  }
  emit eventSelected(selected_);
  update();
}

void TraceTimelineView::scrollToRow(quint32 row, int lane) {
  if (row >= row_top_.size()) return;
  vscroll_->setValue(std::max(0, row_top_[row] + lane * kLane - plotRect().height() / 3));
  update();
}

std::optional<std::pair<qint64, qint64>> TraceTimelineView::selectedRange() const {
  if (!has_range_) return std::nullopt;
  return std::make_pair(std::min(range_a_, range_b_), std::max(range_a_, range_b_));
}

void TraceTimelineView::setSelectedRange(qint64 t0, qint64 t1) {
  range_a_ = t0, range_b_ = t1, has_range_ = true;
  emit rangeSelected(std::min(t0, t1), std::max(t0, t1));
  update();
}

void TraceTimelineView::clearSelectedRange() {
  has_range_ = false;
  update();
}

QImage TraceTimelineView::render(QSize size) {
  if (size != this->size()) {
    resize(size);
    updateScrollBar();
  }
  QImage image(size, QImage::Format_RGB32);
  QPainter p(&image);
  paintAll(p, size);
  return image;
}

void TraceTimelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paintAll(p, size());
}

void TraceTimelineView::paintAll(QPainter& p, QSize size) {
  painted_.clear();
  painted_flows_.clear();
  p.fillRect(QRect(QPoint(0, 0), size), kBackground);
  const QRect plot = plotRect();
  if (!doc_) {
    p.setPen(kText);
    p.drawText(plot, Qt::AlignCenter, tr("No trace loaded"));
    return;
  }
  const auto& rows = doc_->index().rows();
  p.setClipRect(QRect(0, plot.top(), size.width(), plot.height()));
  // Rows: backgrounds, then content, then labels over the left column.
  for (quint32 r = 0; r < rows.size(); ++r) {
    const int top = rowTop(r), h = rowHeight(r);
    if (top + h < plot.top() || top > plot.bottom()) continue;
    const auto kind = rows[r].kind;
    p.fillRect(QRect(plot.left(), top, plot.width(), h),
               kind == analysis::TimelineRow::Kind::process ? kHeaderBg : (r % 2 ? kRowOdd : kRowEven));
    if (kind == analysis::TimelineRow::Kind::slices) paintSlices(p, plot, r, top);
    if (kind == analysis::TimelineRow::Kind::counter) paintCounter(p, plot, r, top);
  }
  // The selected range: a veil outside it, edges and its length.
  if (has_range_) {
    const auto [a, b] = *selectedRange();
    const double xa = std::clamp(xOf(a, plot), double(plot.left()), double(plot.right()));
    const double xb = std::clamp(xOf(b, plot), double(plot.left()), double(plot.right()));
    p.fillRect(QRectF(plot.left(), plot.top(), xa - plot.left(), plot.height()), QColor(0, 0, 0, 110));
    p.fillRect(QRectF(xb, plot.top(), plot.right() - xb, plot.height()), QColor(0, 0, 0, 110));
    p.setPen(QPen(QColor(120, 180, 255), 1));
    p.drawLine(QPointF(xa, plot.top()), QPointF(xa, plot.bottom()));
    p.drawLine(QPointF(xb, plot.top()), QPointF(xb, plot.bottom()));
  }
  paintFlows(p, plot);
  // Labels.
  for (quint32 r = 0; r < rows.size(); ++r) {
    const int top = rowTop(r), h = rowHeight(r);
    if (top + h < plot.top() || top > plot.bottom()) continue;
    const auto& row = rows[r];
    const bool header = row.kind == analysis::TimelineRow::Kind::process;
    p.fillRect(QRect(0, top, kLabelWidth - 1, h), header ? kHeaderBg : kLabelBg);
    QFont f = font();
    f.setBold(header);
    p.setFont(f);
    p.setPen(header ? kText : (row.kind == analysis::TimelineRow::Kind::counter ? kDim : kText));
    const QRect text_rect(header ? 6 : 18, top, kLabelWidth - (header ? 12 : 24), header ? h : std::min(h, kLane + 4));
    QString label = capped(std::string_view(row.label), kMaxLabelChars);  // a process or thread name of any length
    if (const int folded = foldedLanes(r)) label += tr(" (+%1 lanes folded)").arg(folded);
    p.drawText(text_rect, Qt::AlignLeft | Qt::AlignVCenter, p.fontMetrics().elidedText(label, Qt::ElideMiddle, text_rect.width()));
    p.setPen(kGrid);
    p.drawLine(0, top + h - 1, size.width(), top + h - 1);
  }
  // Rank groups: a band above each rank's first row, across labels and plot.
  for (quint32 r = 0; r < rows.size(); ++r) {
    const int g = groupHeaderAbove(r);
    if (g < 0) continue;
    const int top = rowTop(r) - kGroupHeader;
    if (top + kGroupHeader < plot.top() || top > plot.bottom()) continue;
    const auto& group = doc_->rankGroups()[std::size_t(g)];
    p.fillRect(QRect(0, top, size.width(), kGroupHeader), kGroupBg);
    QFont f = font();
    f.setBold(true);
    p.setFont(f);
    p.setPen(kText);
    const QRect label_rect(6, top, kLabelWidth - 12, kGroupHeader);
    p.drawText(label_rect, Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(group.label(), Qt::ElideRight, label_rect.width()));
    p.setFont(font());
    p.setPen(kDim);
    const QRect clock_rect(kLabelWidth + 6, top, std::max(0, size.width() - kLabelWidth - 12), kGroupHeader);
    p.drawText(clock_rect, Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(group.headerText(), Qt::ElideRight, clock_rect.width()));
    p.setPen(kGrid);
    p.drawLine(0, top + kGroupHeader - 1, size.width(), top + kGroupHeader - 1);
  }
  p.setFont(font());
  p.setClipping(false);
  paintRuler(p);
}

std::vector<std::pair<double, QString>> TraceTimelineView::rulerLabels() const {
  std::vector<std::pair<double, QString>> out;
  if (!doc_) return out;
  const QRect plot = plotRect();
  const double ns_per_px = double(t1_ - t0_) / plot.width();
  // A 1-2-5 step, possibly below a nanosecond's multiple; labels precise enough to differ.
  const qint64 step = std::max<qint64>(1, qint64(detail::nice_step(ns_per_px * 110)));
  const qint64 origin = doc_->index().begin_ns();
  const qint64 first = origin + ((t0_ - origin) / step) * step - step;
  for (qint64 t = first; t <= t1_; t += step) {
    const double x = xOf(t, plot);
    if (x < plot.left() - 1) continue;
    out.emplace_back(x, detail::tick_label_ns(double(t - origin), double(step)));
  }
  return out;
}

void TraceTimelineView::paintRuler(QPainter& p) {
  p.fillRect(QRect(0, 0, width(), kRulerHeight), kHeaderBg);
  const QFontMetrics fm = p.fontMetrics();
  for (const auto& [x, label] : rulerLabels()) {
    p.setPen(kGrid);
    p.drawLine(QPointF(x, kRulerHeight - 8), QPointF(x, kRulerHeight));
    const int w = fm.horizontalAdvance(label);
    QRectF r(x + 3, 2, w + 2, kRulerHeight - 8);
    if (r.right() > width() - 2) r.moveRight(width() - 2);
    p.setPen(kText);
    p.drawText(r, Qt::AlignLeft | Qt::AlignVCenter, label);
  }
  p.setPen(kDim);
  p.drawText(QRect(6, 0, kLabelWidth - 12, kRulerHeight), Qt::AlignLeft | Qt::AlignVCenter,
             tr("%1 visible").arg(formatDuration(t1_ - t0_)));
}

void TraceTimelineView::paintSlices(QPainter& p, const QRect& plot, quint32 row, int top) {
  const auto& m = doc_->model();
  const double ns_per_px = double(t1_ - t0_) / plot.width();
  scratch_.clear();
  // Only the lanes on screen: a stream whose GPU annotations overlap can have thousands.
  const int first_lane = std::max(0, (plot.top() - top - 3) / kLane);
  const int last_lane = std::max(0, (plot.bottom() - top - 3) / kLane + 1);
  const int folded = foldedLanes(row);
  // Lanes past the cap are all drawn in the last one, as merged runs.
  const int cap = folded ? kMaxLanes - 1 : INT_MAX;
  doc_->index().items(row, t0_, t1_, ns_per_px, scratch_, 1.0, quint16(std::min(first_lane, 65535)),
                      quint16(std::min({last_lane, cap, 65535})));
  if (folded && last_lane >= kMaxLanes - 1) {
    const std::size_t before = scratch_.size();
    doc_->index().items(row, t0_, t1_, ns_per_px, scratch_, 3.0, quint16(kMaxLanes - 1), UINT16_MAX);
    foldItems(before, ns_per_px * 3.0);
  }
  if (colour_cache_.size() < m.strings().size()) colour_cache_.resize(m.strings().size(), 0);
  const QFontMetrics fm = p.fontMetrics();
  for (const auto& item : scratch_) {
    double x0 = std::max(xOf(item.start_ns, plot), double(plot.left()) - 2);
    double x1 = std::min(xOf(item.end_ns, plot), double(plot.right()) + 2);
    if (x1 - x0 < 1) x1 = x0 + 1;
    const QRectF r(x0, top + 3 + item.depth * kLane, x1 - x0, kLane - 2);
    const auto& e = m.event(item.event);
    QRgb& c = colour_cache_[e.name < colour_cache_.size() ? e.name : 0];
    if (c == 0) c = nameColour(m.name(e));
    if (item.merged()) {
      // A run of events too small to draw one by one: hatched, so the spot is marked.
      p.fillRect(r, kMerged);
      p.fillRect(r, QBrush(QColor(c).lighter(115), Qt::BDiagPattern));
    } else {
      p.fillRect(r, QColor(c));
      if (r.width() > 36) {
        p.setPen(QColor(20, 20, 24));
        const QRectF text = r.adjusted(3, 0, -2, 0);
        p.drawText(text, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(shortName(e.name), Qt::ElideRight, int(text.width())));
      }
    }
    if (!highlighted_.empty() && std::binary_search(highlighted_.begin(), highlighted_.end(), e.name)) {
      p.setPen(QPen(QColor(255, 230, 0), 2));  // a search match
      p.drawRect(r.adjusted(0, 0, 0, 0));
    }
    if (item.count == 1 && item.event == selected_) {
      p.setPen(QPen(kSelection, 2));
      p.drawRect(r.adjusted(-1, -1, 1, 1));
    }
    painted_.push_back({row, r, item});
  }
}

void TraceTimelineView::foldItems(std::size_t first, double gap_ns) {
  // One item per run of overlapping events across all folded lanes, counting them all: a
  // thousand lanes' items stacked on one spot would draw a thousand times and, hovered,
  // tell of one lane's events only.
  auto begin = scratch_.begin() + std::ptrdiff_t(first);
  std::sort(begin, scratch_.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  auto out = begin;
  for (auto it = begin; it != scratch_.end(); ++it) {
    if (out != begin && double(it->start_ns) <= double((out - 1)->end_ns) + gap_ns) {
      (out - 1)->end_ns = std::max((out - 1)->end_ns, it->end_ns);
      (out - 1)->count += it->count;
      continue;
    }
    *out = *it;
    out->depth = quint16(kMaxLanes - 1);
    ++out;
  }
  scratch_.erase(out, scratch_.end());
}

void TraceTimelineView::paintCounter(QPainter& p, const QRect& plot, quint32 row, int top) {
  std::vector<double> cols;
  const auto& index = doc_->index();
  index.counter_columns(doc_->model(), row, t0_, t1_, plot.width(), cols);
  const double max = std::max(index.counter_max(doc_->model(), row), 1.0);
  const int base = top + kCounter - 3, h = kCounter - 8;
  const QRgb c = nameColour(index.rows()[row].label);
  QPainterPath area;
  bool open = false;
  for (int x = 0; x < int(cols.size()); ++x) {
    const double v = cols[size_t(x)];
    if (std::isnan(v)) {
      if (open) area.lineTo(plot.left() + x, base), open = false;
      continue;
    }
    const double y = base - h * v / max;
    if (!open) area.moveTo(plot.left() + x, base), open = true;
    area.lineTo(plot.left() + x, y);
    area.lineTo(plot.left() + x + 1, y);
  }
  if (open) area.lineTo(plot.left() + double(cols.size()), base);
  p.fillPath(area, QColor(qRed(c), qGreen(c), qBlue(c), 150));
  p.setPen(kDim);
  const bool bytes = index.rows()[row].label.find("Memory") != std::string::npos ||
                     index.rows()[row].label.find("allocated") != std::string::npos ||
                     index.rows()[row].label.find("reserved") != std::string::npos;
  p.drawText(QRect(plot.left() + 4, top + 1, 200, 14), Qt::AlignLeft | Qt::AlignVCenter,
             tr("max %1").arg(bytes ? QString::number(max / 1048576.0, 'f', 1) + " MiB" : QString::number(max, 'g', 6)));
}

std::optional<QPointF> TraceTimelineView::eventAnchor(quint32 at_event, quint32 in_slice, const QRect& plot) const {
  const auto& m = doc_->model();
  if (in_slice >= m.event_count()) in_slice = at_event;
  if (at_event >= m.event_count()) at_event = in_slice;
  if (in_slice >= m.event_count()) return std::nullopt;
  const auto& slice = m.event(in_slice);
  const quint32 row = doc_->index().row_of_track(slice.track);
  if (row >= row_top_.size()) return std::nullopt;
  return QPointF(xOf(m.event(at_event).ts_ns, plot), rowTop(row) + 3 + slice.depth * kLane + (kLane - 2) / 2.0);
}

void TraceTimelineView::paintFlows(QPainter& p, const QRect& plot) {
  if (selected_ == kNone) return;
  const auto& m = doc_->model();
  for (quint32 f : doc_->index().flows_of(m, selected_)) {
    const auto& flow = m.flows()[f];
    // From the "s" point, in the launching slice's lane, to the start of the slice it binds.
    auto from = eventAnchor(flow.from_event, flow.from_slice, plot);
    auto to = eventAnchor(flow.to_slice, flow.to_slice, plot);
    if (!from || !to) continue;
    // An end far off screen is brought to just outside the plot's edge, along the same row:
    // the arrow still leads off the right way, and antialiasing never meets a curve a
    // million pixels long.
    const double lo = plot.left() - 40.0, hi = plot.right() + 40.0;
    from->setX(std::clamp(from->x(), lo, hi));
    to->setX(std::clamp(to->x(), lo, hi));
    QPainterPath path(*from);
    const double dy = to->y() - from->y();
    path.cubicTo(QPointF(from->x(), from->y() + dy * 0.5), QPointF(to->x(), to->y() - dy * 0.5), *to);
    p.setPen(QPen(kFlow, 2));
    p.setBrush(Qt::NoBrush);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.drawPath(path);
    // Arrow head pointing along the curve's end.
    const double dir = dy >= 0 ? 1 : -1;
    QPolygonF head;
    head << *to << QPointF(to->x() - 5, to->y() - 9 * dir) << QPointF(to->x() + 5, to->y() - 9 * dir);
    p.setBrush(kFlow);
    p.drawPolygon(head);
    p.setBrush(Qt::NoBrush);
    p.setRenderHint(QPainter::Antialiasing, false);
    painted_flows_.push_back({f, *from, *to});
  }
}

const TraceTimelineView::PaintedItem* TraceTimelineView::itemAt(QPoint point) const {
  for (const auto& it : painted_)
    if (it.rect.adjusted(-1, -1, 1, 1).contains(point)) return &it;
  return nullptr;
}

QString TraceTimelineView::describe(QPoint point) const {
  if (!doc_) return {};
  const PaintedItem* hit = itemAt(point);
  const auto& m = doc_->model();
  if (!hit) {
    // A counter row: its value at the pointer.
    const QRect plot = plotRect();
    const auto& rows = doc_->index().rows();
    for (quint32 r = 0; r < rows.size(); ++r) {
      if (rows[r].kind != analysis::TimelineRow::Kind::counter) continue;
      const int top = rowTop(r);
      if (point.y() < top || point.y() >= top + rowHeight(r) || point.x() < plot.left()) continue;
      std::vector<double> cols;
      doc_->index().counter_columns(m, r, t0_, t1_, plot.width(), cols);
      const int x = point.x() - plot.left();
      if (x < 0 || x >= int(cols.size()) || std::isnan(cols[std::size_t(x)])) return {};
      const double v = cols[std::size_t(x)];
      const std::string& label = rows[r].label;
      const bool bytes = label.find("Memory") != std::string::npos || label.find("allocated") != std::string::npos ||
                         label.find("reserved") != std::string::npos || label.find("bytes") != std::string::npos;
      return tr("%1\n%2 at %3")
          .arg(capped(std::string_view(label), kMaxTooltipNameChars))
          .arg(bytes ? QString::number(v / 1048576.0, 'f', 2) + " MiB" : QString::number(v, 'g', 8))
          .arg(formatDuration(timeAt(point.x(), plot) - doc_->index().begin_ns()));
    }
    return {};
  }
  const auto& item = hit->item;
  if (item.merged() && item.depth == kMaxLanes - 1 && foldedLanes(hit->row) > 0)
    return tr("%1 events of the %2 folded lanes here (%3 to %4)\nclick or zoom in to see them")
        .arg(item.count)
        .arg(foldedLanes(hit->row))
        .arg(formatDuration(item.start_ns - doc_->index().begin_ns()), formatDuration(item.end_ns - doc_->index().begin_ns()));
  if (item.merged())
    return tr("%1 events merged here (%2 to %3)\nclick or zoom in to see them one by one")
        .arg(item.count)
        .arg(formatDuration(item.start_ns - doc_->index().begin_ns()), formatDuration(item.end_ns - doc_->index().begin_ns()));
  const auto& e = m.event(item.event);
  // No more of a name than a slice or a tooltip could show (capped_text.h).
  const QString full = cappedTooltip(m.name(e));
  const QString brief = shortName(e.name);
  QString text = brief == full ? full : brief + "\n" + full;
  text += "\n" + capped(m.cat(e), kMaxLabelChars);
  if (e.dur_ns >= 0) text += "  " + formatDuration(e.dur_ns);
  text += tr("\nat %1").arg(formatDuration(e.ts_ns - doc_->index().begin_ns()));
  return text;
}

void TraceTimelineView::wheelEvent(QWheelEvent* e) {
  if (e->modifiers() & Qt::ShiftModifier) {
    vscroll_->setValue(vscroll_->value() - e->angleDelta().y());
  } else {
    const QRect plot = plotRect();
    const double anchor = std::clamp((e->position().x() - plot.left()) / double(plot.width()), 0.0, 1.0);
    zoom(std::pow(1.2, e->angleDelta().y() / 120.0), anchor);
  }
  e->accept();
}

void TraceTimelineView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  press_at_ = e->position().toPoint();
  press_t0_ = t0_, press_t1_ = t1_;
  moved_ = false;
  drag_ = (e->modifiers() & Qt::ShiftModifier) ? Drag::range : Drag::pan;
  if (drag_ == Drag::range) {
    range_a_ = range_b_ = timeAt(press_at_.x(), plotRect());
    has_range_ = true;
  }
}

void TraceTimelineView::mouseMoveEvent(QMouseEvent* e) {
  const QRect plot = plotRect();
  const QPoint at = e->position().toPoint();
  if (drag_ != Drag::none && (at - press_at_).manhattanLength() > 3) moved_ = true;
  if (drag_ == Drag::pan && moved_) {
    const auto d = qint64(-(at.x() - press_at_.x()) * double(press_t1_ - press_t0_) / plot.width());
    setRange(press_t0_ + d, press_t1_ + d);
    vscroll_->setValue(vscroll_->value() - (at.y() - press_at_.y()));
    press_at_.setY(at.y());
    return;
  }
  if (drag_ == Drag::range) {
    range_b_ = timeAt(at.x(), plot);
    update();
    return;
  }
  const QString text = describe(at);
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(e->globalPosition().toPoint(), text, this);
}

void TraceTimelineView::mouseReleaseEvent(QMouseEvent* e) {
  const Drag was = std::exchange(drag_, Drag::none);
  if (was == Drag::range) {
    if (moved_) setSelectedRange(range_a_, range_b_);
    else clearSelectedRange();
    return;
  }
  if (was != Drag::pan || moved_) return;
  const PaintedItem* hit = itemAt(e->position().toPoint());
  if (!hit) {
    selectEvent(kNone);
    return;
  }
  if (hit->item.merged()) {  // zoom into the run
    const qint64 pad = std::max<qint64>((hit->item.end_ns - hit->item.start_ns) / 10, 50);
    setRange(hit->item.start_ns - pad, hit->item.end_ns + pad);
    return;
  }
  selectEvent(hit->item.event);
}

void TraceTimelineView::keyPressEvent(QKeyEvent* e) {
  const QRect plot = plotRect();
  const QPoint mouse = mapFromGlobal(QCursor::pos());
  const double anchor = plot.contains(mouse) ? (mouse.x() - plot.left()) / double(plot.width()) : 0.5;
  switch (e->key()) {
    case Qt::Key_W: zoom(1.3, anchor); break;
    case Qt::Key_S: zoom(1 / 1.3, anchor); break;
    case Qt::Key_A: pan(-0.15); break;
    case Qt::Key_D: pan(0.15); break;
    case Qt::Key_Home: resetZoom(); break;
    case Qt::Key_F: focusSelection(); break;
    case Qt::Key_Escape:
      clearSelectedRange();
      selectEvent(kNone);
      break;
    default: QWidget::keyPressEvent(e); return;
  }
  e->accept();
}

}  // namespace cudascope::gui
