#pragma once
// A time range's summary (analysis::RangeSummary) as one table: GPU streams with their busy
// share first, then kernels by name, then NVTX ranges and annotations by name.
// Qt::UserRole holds raw numbers (counts, nanoseconds, the busy fraction) and whole names.
// A Name cell shows at most kMaxLabelChars of its (shortened) name, its tooltip at most
// kMaxTooltipNameChars of the whole one and its length (capped_text.h); FullTextRole is the
// cell's text uncut. Tables sort by SortRole.

#include <cudascope/analysis/timeline_summary.h>
#include <cudascope/gui/trace_document.h>

#include <QFuture>

#include <QAbstractTableModel>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::gui {

class RangeSummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Name, Count, Total, Mean, Min, Max, Busy, ColumnCount };
  // The raw value, but for a name its place in the order of the whole names (UTF-8 bytes,
  // i.e. code point order; ties by row): a sort by name compares integers, never converting
  // names of any length, and still orders by the whole name, not by what a cell shows.
  static constexpr int SortRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;
  void setSummary(analysis::RangeSummary summary);
  void clear() { setSummary({}); }
  const analysis::RangeSummary& summary() const { return summary_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  const std::string& nameOf(std::size_t row) const;
  QString shownName(std::size_t row) const;
  std::uint32_t nameRank(std::size_t row) const;
  QVariant nameData(std::size_t row, int role) const;

  analysis::RangeSummary summary_;
  mutable std::vector<QString> shown_;           // per row: its Name cell, made when first shown
  mutable std::vector<std::uint32_t> name_rank_;  // per row: SortRole of its name, made on the first sort by name
};

// The summary of [t0, t1) (ns) of the document's trace, computed on a worker thread. The
// document must outlive the future and not follow its file meanwhile (the summary reads the
// model and its index, which following appends to).
QFuture<analysis::RangeSummary> summarize_range_async(const TraceDocument& doc, qint64 t0, qint64 t1);

}  // namespace cudascope::gui
