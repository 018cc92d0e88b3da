#pragma once
// Growth between two snapshots, one row per allocating frame (largest growth first).
// Qt::UserRole holds raw numbers (the delta as qlonglong) and the whole group name, which
// its cell cuts to kMaxLabelChars and its tooltip to kMaxTooltipNameChars (capped_text.h).

#include <cudascope/analysis/compare.h>
#include <cudascope/gui/loaded_snapshot.h>

#include <QAbstractTableModel>

namespace cudascope::gui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Frame, BytesA, BytesB, Delta, CountA, CountB, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setComparison(analysis::Comparison comparison);
  // Compares snapshot `a` with `b` (analysis::compare_snapshots) and shows the result.
  void compare(const LoadedSnapshot& a, const LoadedSnapshot& b, analysis::GroupBy group);
  const analysis::Comparison& comparison() const { return comparison_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  analysis::Comparison comparison_;
};

}  // namespace cudascope::gui
