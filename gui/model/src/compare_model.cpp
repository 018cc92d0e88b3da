#include <cudascope/gui/compare_model.h>

#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/record_table_model.h>

namespace cudascope::gui {

void CompareModel::compare(const LoadedSnapshot& a, const LoadedSnapshot& b, analysis::GroupBy group) {
  setComparison(analysis::compare_snapshots(*a.snapshot, *b.snapshot, group));
}

void CompareModel::setComparison(analysis::Comparison comparison) {
  beginResetModel();
  comparison_ = std::move(comparison);
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(comparison_.rows.size());
}
int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const auto& r = comparison_.rows[static_cast<size_t>(index.row())];
  if (index.column() == Frame) {  // a frame's or an NVTX range's name: cut in the cell, whole in the raw role
    switch (role) {
      case Qt::DisplayRole: return capped(r.frame, kMaxLabelChars);
      case Qt::ToolTipRole: return cappedTooltip(r.frame);
      case Qt::UserRole:
      case FullTextRole: return QString::fromStdString(r.frame);
      default: return {};
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case BytesA: return formatBytes(r.bytes_a);
      case BytesB: return formatBytes(r.bytes_b);
      case Delta: return (r.delta() >= 0 ? "+" : "-") + formatBytes(uint64_t(std::llabs(r.delta())));
      case CountA: return qulonglong(r.count_a);
      case CountB: return qulonglong(r.count_b);
    }
  } else if (role == Qt::UserRole) {
    switch (index.column()) {
      case BytesA: return qulonglong(r.bytes_a);
      case BytesB: return qulonglong(r.bytes_b);
      case Delta: return qlonglong(r.delta());
      case CountA: return qulonglong(r.count_a);
      case CountB: return qulonglong(r.count_b);
    }
  }
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  static const char* names[] = {"Group (frame or NVTX range)", "A", "B", "Growth", "Blocks A", "Blocks B"};
  return section >= 0 && section < ColumnCount ? QVariant(names[section]) : QVariant();
}

}  // namespace cudascope::gui
