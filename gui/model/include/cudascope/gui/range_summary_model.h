#pragma once
// A time range's summary (analysis::RangeSummary) as one table: GPU streams with their busy
// share first, then kernels by name, then NVTX ranges and annotations by name.
// Qt::UserRole holds raw numbers (counts, nanoseconds, the busy fraction).

#include <cudascope/analysis/timeline_summary.h>
#include <cudascope/gui/trace_document.h>

#include <QFuture>

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

// The summary of [t0, t1) (ns) of the document's trace, computed on a worker thread. The
// document must outlive the future and not follow its file meanwhile (the summary reads the
// model and its index, which following appends to).
QFuture<analysis::RangeSummary> summarize_range_async(const TraceDocument& doc, qint64 t0, qint64 t1);

}  // namespace cudascope::gui
