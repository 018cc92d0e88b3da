#include <cudascope/gui/trace_table_model.h>

namespace cudascope::gui {

using analysis::TraceEntry;

QString TraceTableModel::header(int column) const {
  static const char* names[] = {"#", "Time (ms)", "Action", "Address", "Size", "Stream", "Device", "Frame"};
  return names[column];
}

QVariant TraceTableModel::display(uint32_t r, int column) const {
  const TraceEntry& e = snap().trace[r];
  switch (column) {
    case Index: return r;
    case Time: {
      const int64_t t0 = snap().trace.empty() ? 0 : snap().trace.front().time_us;
      return QString::number(double(e.time_us - t0) / 1000.0, 'f', 3);
    }
    case Action: return QString::fromUtf8(analysis::action_name(e.action).data(), int(analysis::action_name(e.action).size()));
    case Address: return e.action == analysis::Action::oom ? QStringLiteral("-") : formatAddress(e.addr);
    case Size:
      if (e.action == analysis::Action::oom) {
        // An OOM entry's size is what was asked; its address field is unused.
        QString text = tr("asked %1").arg(formatBytes(e.size));
        for (const auto& [index, free] : snap().oom_device_free)
          if (index == r) text += tr(", %1 free on the device").arg(formatBytes(free));
        return text;
      }
      return formatBytes(e.size);
    case Stream: return formatAddress(snap().stream_value(e.stream));
    case Device: return e.device;
    case Frame: return frameText(e.stack);
  }
  return {};
}

QVariant TraceTableModel::raw(uint32_t r, int column) const {
  const TraceEntry& e = snap().trace[r];
  switch (column) {
    case Index: return r;
    case Time: return qlonglong(e.time_us);
    case Action: return int(e.action);
    case Address: return qulonglong(e.addr);
    case Size: return qulonglong(e.size);
    case Stream: return qulonglong(snap().stream_value(e.stream));
    case Device: return e.device;
    case Frame: return fullFrameText(e.stack);
  }
  return {};
}

bool TraceTableModel::less(uint32_t a, uint32_t b, int column) const {
  const TraceEntry& x = snap().trace[a];
  const TraceEntry& y = snap().trace[b];
  switch (column) {
    case Index: return a < b;
    case Time: return x.time_us < y.time_us;
    case Action: return x.action < y.action;
    case Address: return x.addr < y.addr;
    case Size: return x.size < y.size;
    case Stream: return snap().stream_value(x.stream) < snap().stream_value(y.stream);
    case Device: return x.device < y.device;
    case Frame: return x.stack != y.stack && frameLess(x.stack, y.stack);  // by the whole frame (loaded_snapshot.h)
  }
  return false;
}

bool TraceTableModel::accepts(uint32_t r) const {
  const TraceEntry& e = snap().trace[r];
  return sizeMatches(e.size) && (filter_.stream < 0 || filter_.stream == e.stream) &&
         (filter_.action < 0 || filter_.action == int(e.action)) && stackMatches(e.stack);
}

bool TraceTableModel::covers(uint32_t r, uint64_t address) const {
  const TraceEntry& e = snap().trace[r];
  return address >= e.addr && address < e.addr + std::max<uint64_t>(e.size, 1);
}

bool TraceTableModel::highlighted(uint32_t r) const { return snap().trace[r].action == analysis::Action::oom; }

}  // namespace cudascope::gui
