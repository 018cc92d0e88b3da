#include <cudascope/gui/block_table_model.h>

namespace cudascope::gui {

using analysis::Block;

QString BlockTableModel::header(int column) const {
  static const char* names[] = {"Segment", "Address", "Size", "Requested", "State", "Stream", "Frame"};
  return names[column];
}

QVariant BlockTableModel::display(uint32_t r, int column) const {
  const Block& b = snap().blocks[r];
  switch (column) {
    case Segment: return b.segment;
    case Address: return formatAddress(b.address);
    case Size: return formatBytes(b.size);
    case Requested: return formatBytes(b.requested_size);
    case State: {
      const auto name = analysis::block_state_name(b.state);
      return QString::fromUtf8(name.data(), int(name.size()));
    }
    case Stream: return formatAddress(snap().stream_value(snap().segments[b.segment].stream));
    case Frame: return frameText(b.stack);
  }
  return {};
}

QVariant BlockTableModel::raw(uint32_t r, int column) const {
  const Block& b = snap().blocks[r];
  switch (column) {
    case Segment: return b.segment;
    case Address: return qulonglong(b.address);
    case Size: return qulonglong(b.size);
    case Requested: return qulonglong(b.requested_size);
    case State: return int(b.state);
    case Stream: return qulonglong(snap().stream_value(snap().segments[b.segment].stream));
    case Frame: return fullFrameText(b.stack);
  }
  return {};
}

bool BlockTableModel::less(uint32_t a, uint32_t b, int column) const {
  const Block& x = snap().blocks[a];
  const Block& y = snap().blocks[b];
  switch (column) {
    case Segment: return x.segment < y.segment;
    case Address: return x.address < y.address;
    case Size: return x.size < y.size;
    case Requested: return x.requested_size < y.requested_size;
    case State: return x.state < y.state;
    case Stream: return snap().segments[x.segment].stream < snap().segments[y.segment].stream;
    case Frame: return frameLess(x.stack, y.stack);  // by the whole frame (loaded_snapshot.h)
  }
  return false;
}

bool BlockTableModel::accepts(uint32_t r) const {
  const Block& b = snap().blocks[r];
  return sizeMatches(b.size) && (filter_.stream < 0 || filter_.stream == snap().segments[b.segment].stream) &&
         (filter_.action < 0 || filter_.action == int(b.state)) && stackMatches(b.stack);
}

bool BlockTableModel::covers(uint32_t r, uint64_t address) const {
  const Block& b = snap().blocks[r];
  return address >= b.address && address < b.address + b.size;
}

}  // namespace cudascope::gui
