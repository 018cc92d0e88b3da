#include <cudascope/gui/segment_table_model.h>

namespace cudascope::gui {

using analysis::Segment;

QString SegmentTableModel::header(int column) const {
  static const char* names[] = {"#", "Address", "Total", "Allocated", "Active", "Blocks", "Stream", "Type", "Device"};
  return names[column];
}

QVariant SegmentTableModel::display(uint32_t r, int column) const {
  const Segment& s = snap().segments[r];
  switch (column) {
    case Index: return r;
    case Address: return formatAddress(s.address);
    case Total: return formatBytes(s.total_size);
    case Allocated: return formatBytes(s.allocated_size);
    case Active: return formatBytes(s.active_size);
    case Blocks: return s.block_count;
    case Stream: return formatAddress(snap().stream_value(s.stream));
    case Type: return capped(snap().str(s.segment_type), kMaxLabelChars) + (s.is_expandable ? " (expandable)" : "");
    case Device: return s.device;
  }
  return {};
}

QVariant SegmentTableModel::raw(uint32_t r, int column) const {
  const Segment& s = snap().segments[r];
  switch (column) {
    case Index: return r;
    case Address: return qulonglong(s.address);
    case Total: return qulonglong(s.total_size);
    case Allocated: return qulonglong(s.allocated_size);
    case Active: return qulonglong(s.active_size);
    case Blocks: return s.block_count;
    case Stream: return qulonglong(snap().stream_value(s.stream));
    case Type: {
      const auto t = snap().str(s.segment_type);
      return QString::fromUtf8(t.data(), qsizetype(t.size())) + (s.is_expandable ? " (expandable)" : "");
    }
    case Device: return s.device;
  }
  return {};
}

bool SegmentTableModel::less(uint32_t a, uint32_t b, int column) const {
  const Segment& x = snap().segments[a];
  const Segment& y = snap().segments[b];
  switch (column) {
    case Index: return a < b;
    case Address: return x.address < y.address;
    case Total: return x.total_size < y.total_size;
    case Allocated: return x.allocated_size < y.allocated_size;
    case Active: return x.active_size < y.active_size;
    case Blocks: return x.block_count < y.block_count;
    case Stream: return snap().stream_value(x.stream) < snap().stream_value(y.stream);
    case Type: return snap().str(x.segment_type) < snap().str(y.segment_type);
    case Device: return x.device < y.device;
  }
  return false;
}

bool SegmentTableModel::accepts(uint32_t r) const {
  const Segment& s = snap().segments[r];
  return sizeMatches(s.total_size) && (filter_.stream < 0 || filter_.stream == s.stream) && stackMatches(s.stack);
}

bool SegmentTableModel::covers(uint32_t r, uint64_t address) const {
  const Segment& s = snap().segments[r];
  return address >= s.address && address < s.address + s.total_size;
}

}  // namespace cudascope::gui
