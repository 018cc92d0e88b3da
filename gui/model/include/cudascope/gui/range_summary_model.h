#pragma once
// A time range's summary (analysis::RangeSummary) as one table: GPU streams with their busy
// share first, then kernels by name, then NVTX ranges and annotations by name.
// Qt::UserRole holds raw numbers (counts, nanoseconds, the busy fraction).

#include <cudascope/analysis/timeline_summary.h>

#include <QAbstractTableModel>

#include <vector>

namespace cudascope::gui {

class RangeSummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Name, Count, Total, Mean, Min, Max, Busy, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setSummary(analysis::RangeSummary summary);
  void clear() { setSummary({}); }
  const analysis::RangeSummary& summary() const { return summary_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  analysis::RangeSummary summary_;
};

}  // namespace cudascope::gui
