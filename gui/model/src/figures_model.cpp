#include <cudascope/gui/figures_model.h>

#include <cudascope/gui/record_table_model.h>

namespace cudascope::gui {

void FiguresModel::setFigures(const analysis::Figures& f) {
  beginResetModel();
  rows_.clear();
  auto bytes = [&](const QString& name, uint64_t v) { rows_.push_back({name, formatBytes(v), qulonglong(v)}); };
  auto count = [&](const QString& name, uint64_t v) { rows_.push_back({name, QString::number(v), qulonglong(v)}); };
  count("Segments", f.segments);
  count("Blocks", f.blocks);
  count("Trace entries", f.trace_entries);
  bytes("Reserved", f.reserved_bytes);
  bytes("Allocated", f.allocated_bytes);
  bytes("Active", f.active_bytes);
  bytes("Requested", f.requested_bytes);
  bytes("Inactive (cached, free)", f.inactive_bytes);
  bytes("Largest free block", f.largest_free_block);
  bytes("Internal fragmentation", f.internal_fragmentation_bytes);
  rows_.push_back({"External fragmentation", QString::number(100.0 * f.external_fragmentation_ratio, 'f', 1) + " %",
                   f.external_fragmentation_ratio});
  count("OOM entries", f.oom_entries);
  for (int a = 0; a < analysis::kActionCount; ++a)
    if (f.actions[a]) {
      const auto name = analysis::action_name(static_cast<analysis::Action>(a));
      count("Trace: " + QString::fromUtf8(name.data(), int(name.size())), f.actions[a]);
    }
  for (const auto& s : f.streams) {
    const QString p = "Stream " + formatAddress(s.stream) + ": ";
    count(p + "segments", s.segments);
    bytes(p + "reserved", s.reserved_bytes);
    bytes(p + "allocated", s.allocated_bytes);
    bytes(p + "active", s.active_bytes);
    bytes(p + "largest free block", s.largest_free_block);
    count(p + "trace entries", s.trace_entries);
  }
  endResetModel();
}

int FiguresModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int FiguresModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 2; }

QVariant FiguresModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() > 1) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::DisplayRole) return index.column() == 0 ? r.name : r.text;
  if (role == Qt::UserRole) return index.column() == 0 ? QVariant(r.name) : r.value;
  return {};
}

QVariant FiguresModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  return section == 0 ? QStringLiteral("Figure") : QStringLiteral("Value");
}

}  // namespace cudascope::gui
