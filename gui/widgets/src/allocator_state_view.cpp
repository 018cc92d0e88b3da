#include <cudascope/gui/allocator_state_view.h>

#include <cudascope/gui/record_table_model.h>

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <unordered_map>

namespace cudascope::gui {
namespace {
constexpr int kHeader = 46, kRow = 14, kGap = 3, kLabel = 180, kMargin = 8;
}

AllocatorStateView::AllocatorStateView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumWidth(400);
}

void AllocatorStateView::setState(std::shared_ptr<const LoadedSnapshot> loaded, analysis::AllocatorState state,
                                  bool final_state) {
  loaded_ = std::move(loaded);
  snapshot_ = loaded_ ? loaded_->snapshot : nullptr;
  state_ = std::move(state);
  final_ = final_state;
  max_segment_ = 1;
  for (const auto& s : state_.segments) max_segment_ = std::max(max_segment_, s.size);
  updateGeometry();
  update();
}

QSize AllocatorStateView::sizeHint() const {
  return QSize(900, kHeader + int(state_.segments.size()) * (kRow + kGap) + kMargin);
}

QRectF AllocatorStateView::blockRect(int segment, const analysis::StateBlock& b) const {
  const auto& s = state_.segments[size_t(segment)];
  const double scale = double(std::max(1, width() - kLabel - 2 * kMargin)) / double(max_segment_);
  const double x = kLabel + kMargin + double(b.address - s.address) * scale;
  return QRectF(x, kHeader + segment * (kRow + kGap), std::max(1.0, double(b.size) * scale), kRow);
}

void AllocatorStateView::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  p.setPen(palette().text().color());
  const auto& st = state_;
  p.drawText(QRect(kMargin, 4, width() - 2 * kMargin, 18), Qt::AlignLeft,
             QStringLiteral("reserved %1   allocated %2   active %3   inactive %4   largest free block %5   "
                            "external fragmentation %6 %")
                 .arg(formatBytes(st.reserved_bytes), formatBytes(st.allocated_bytes), formatBytes(st.active_bytes),
                      formatBytes(st.inactive_bytes), formatBytes(st.largest_free_block))
                 .arg(100.0 * st.external_fragmentation_ratio, 0, 'f', 1));
  // Internal fragmentation: known only for the snapshot's own blocks (the trace records block sizes only).
  uint64_t internal = 0;
  std::unordered_map<uint64_t, uint64_t> requested;
  if (final_ && snapshot_) {
    for (const auto& b : snapshot_->blocks)
      if (b.state == analysis::BlockState::active_allocated) {
        requested[b.address] = b.requested_size;
        internal += b.size - std::min(b.size, b.requested_size);
      }
  }
  const QString legend = final_ ? QStringLiteral("internal fragmentation %1 (hatched)").arg(formatBytes(internal))
                                : QStringLiteral("internal fragmentation: shown at the last entry (the trace holds no requested sizes)");
  const int lx = kMargin;
  auto swatch = [&](int x, QRgb c, const QString& label) {
    p.fillRect(x, 26, 12, 12, QColor::fromRgba(c));
    p.drawText(x + 16, 24, 160, 16, Qt::AlignLeft | Qt::AlignVCenter, label);
    return x + 20 + p.fontMetrics().horizontalAdvance(label) + 12;
  };
  int x = swatch(lx, kAllocated, "allocated");
  x = swatch(x, kPending, "pending free");
  x = swatch(x, kInactive, "inactive (free, cached)");
  p.drawText(x, 24, width() - x, 16, Qt::AlignLeft | Qt::AlignVCenter, legend);

  const QRect dirty = event->rect();
  for (int s = 0; s < int(st.segments.size()); ++s) {
    const int y = kHeader + s * (kRow + kGap);
    if (y > dirty.bottom() || y + kRow < dirty.top()) continue;
    const auto& seg = st.segments[size_t(s)];
    p.setPen(palette().text().color());
    p.drawText(QRect(kMargin, y, kLabel - 4, kRow), Qt::AlignLeft | Qt::AlignVCenter,
               formatAddress(seg.address) + " " + formatBytes(seg.size));
    for (const auto& b : seg.blocks) {
      const QRectF r = blockRect(s, b);
      const QRgb c = b.state == analysis::BlockState::active_allocated ? blockColour(b)
                     : b.state == analysis::BlockState::active_pending_free ? kPending
                                                                             : kInactive;
      p.fillRect(r, QColor::fromRgba(c));
      if (auto it = requested.find(b.address); b.state == analysis::BlockState::active_allocated && it != requested.end() &&
                                               it->second < b.size) {
        QRectF tail = r;
        tail.setLeft(r.left() + r.width() * double(it->second) / double(b.size));
        p.fillRect(tail, QBrush(QColor::fromRgba(kUnrequested), Qt::BDiagPattern));
      }
      if (r.width() >= 4) {  // block boundaries where they can be seen
        p.setPen(QColor(20, 20, 24));
        p.drawLine(QPointF(r.left(), r.top()), QPointF(r.left(), r.bottom()));
      }
    }
  }
  if (const QRect sel = selectedRect(); !sel.isEmpty()) {
    p.setPen(QPen(Qt::white, 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(sel.adjusted(-2, -2, 2, 2));
  }
}

QRgb AllocatorStateView::blockColour(const analysis::StateBlock& b) const {
  if (loaded_ && b.alloc_entry < loaded_->interval_of_entry.size() && loaded_->interval_of_entry[b.alloc_entry] != UINT32_MAX)
    return analysis::StackedTimeline::colour(loaded_->interval_of_entry[b.alloc_entry]);
  if (loaded_ && b.alloc_entry == UINT32_MAX) {  // allocated before the trace: the timeline's interval for it
    const uint32_t iv = loaded_->intervalAt(b.address);
    if (iv != UINT32_MAX) return analysis::StackedTimeline::colour(iv);
  }
  return kAllocated;
}

void AllocatorStateView::setSelectedAddress(uint64_t address) {
  selected_address_ = address;
  update();
}

QRect AllocatorStateView::selectedRect() const {
  if (selected_address_ == 0) return {};
  for (int s = 0; s < int(state_.segments.size()); ++s) {
    const auto& seg = state_.segments[size_t(s)];
    if (selected_address_ < seg.address || selected_address_ >= seg.address + seg.size) continue;
    for (const auto& b : seg.blocks)
      if (selected_address_ >= b.address && selected_address_ < b.address + std::max<uint64_t>(b.size, 1))
        return blockRect(s, b).toAlignedRect();
  }
  return {};
}

void AllocatorStateView::mouseReleaseEvent(QMouseEvent* e) {
  const Hit h = hitAt(e->position().toPoint());
  if (h.segment < 0 || h.block < 0 || e->button() != Qt::LeftButton) return;
  const auto& b = state_.segments[size_t(h.segment)].blocks[size_t(h.block)];
  emit blockClicked(b.address, b.size, b.stack, b.alloc_entry);
}

AllocatorStateView::Hit AllocatorStateView::hitAt(QPoint pt) const {
  const int s = (pt.y() - kHeader) / (kRow + kGap);
  if (pt.y() < kHeader || s < 0 || s >= int(state_.segments.size())) return {};
  const auto& seg = state_.segments[size_t(s)];
  for (int b = 0; b < int(seg.blocks.size()); ++b)
    if (blockRect(s, seg.blocks[size_t(b)]).adjusted(0, 0, 0.5, 0).contains(pt)) return {s, b};
  return {s, -1};
}

QString AllocatorStateView::describe(QPoint pt) const {
  const Hit h = hitAt(pt);
  if (h.segment < 0) return {};
  const auto& seg = state_.segments[size_t(h.segment)];
  QString text = QStringLiteral("segment %1, %2, stream %3")
                     .arg(formatAddress(seg.address), formatBytes(seg.size), formatAddress(snapshot_->stream_value(seg.stream)));
  if (h.block < 0) return text;
  const auto& b = seg.blocks[size_t(h.block)];
  const auto state = analysis::block_state_name(b.state);
  text += QStringLiteral("\nblock %1, %2, %3").arg(formatAddress(b.address), formatBytes(b.size),
                                                 QString::fromUtf8(state.data(), int(state.size())));
  if (b.alloc_entry != UINT32_MAX) text += QStringLiteral("\nallocated by trace entry %1").arg(b.alloc_entry);
  const QString stack = loaded_->stackText(b.stack, 8);
  if (!stack.isEmpty()) text += "\n  " + QString(stack).replace('\n', "\n  ");
  return text;
}

void AllocatorStateView::mouseMoveEvent(QMouseEvent* e) {
  const QString text = describe(e->position().toPoint());
  if (text.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(e->globalPosition().toPoint(), text, this);
}

}  // namespace cudascope::gui
