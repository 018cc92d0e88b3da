#pragma once
// Base of the segment, block and trace tables: a flat list of record indices into the
// snapshot, sorted and filtered here with direct comparisons (a QSortFilterProxyModel
// over a million rows would go through QVariant for every comparison).
//
// Roles: DisplayRole text; Qt::UserRole the raw value (numbers as qulonglong, text whole);
// ToolTipRole the allocating stack (allocator and unwinder frames hidden); HighlightRole
// true for rows to stand out (OOM entries); FullTextRole a cell's text uncut. Frame columns
// show the stack's user frame (stack_frames.h), name and file name each cut to
// kMaxLabelChars (capped_text.h); the frame filter matches the whole "name (filename:line)",
// and sorting by frame compares whole names (LoadedSnapshot::userFrameLess). Not
// thread-safe: use on the UI thread.

#include <cudascope/gui/loaded_snapshot.h>

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <memory>
#include <unordered_set>
#include <vector>

namespace cudascope::gui {

struct RecordFilter {
  uint64_t min_size = 0;
  uint64_t max_size = UINT64_MAX;
  int stream = -1;       // a StreamId, or -1 for all
  int action = -1;       // an Action (trace) or BlockState (blocks), or -1 for all
  QString frame_text;    // substring, ignoring case, of any visible frame's "name (filename:line)"; empty for all
};

class RecordTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int HighlightRole = Qt::UserRole + 1;
  using QAbstractTableModel::QAbstractTableModel;

  void setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded);
  void setFilter(const RecordFilter& filter);
  const RecordFilter& filter() const { return filter_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  // A column < 0 restores file order (what a table opens in).
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
  int sortColumn() const { return sort_column_; }

  // The record (index into the snapshot's vector) shown at `row`, and the reverse.
  uint32_t recordAt(int row) const { return rows_[static_cast<size_t>(row)]; }
  int rowOfRecord(uint32_t record) const;
  // The first row, after `after`, whose record covers `address` (-1 if none).
  int findAddress(uint64_t address, int after = -1) const;
  // The first row, after `after`, whose stack has a visible frame whose text contains
  // `text`, ignoring case (-1 if none).
  int findFrameText(const QString& text, int after = -1) const;
  virtual analysis::StackId stackOf(uint32_t record) const = 0;

 protected:
  virtual size_t recordCount() const = 0;
  virtual int columns() const = 0;
  virtual QString header(int column) const = 0;
  virtual QVariant display(uint32_t record, int column) const = 0;
  virtual QVariant raw(uint32_t record, int column) const = 0;
  virtual bool less(uint32_t a, uint32_t b, int column) const = 0;
  virtual bool accepts(uint32_t record) const = 0;
  virtual bool covers(uint32_t record, uint64_t address) const = 0;
  virtual bool highlighted(uint32_t) const { return false; }

  bool stackMatches(analysis::StackId stack) const;  // against filter_.frame_text
  bool sizeMatches(uint64_t size) const { return size >= filter_.min_size && size <= filter_.max_size; }
  const analysis::Snapshot& snap() const { return *loaded_->snapshot; }
  QString frameText(analysis::StackId stack) const;      // the user frame, as its cell shows it
  QString fullFrameText(analysis::StackId stack) const;  // the same, nothing cut
  bool frameLess(analysis::StackId a, analysis::StackId b) const { return loaded_->userFrameLess(a, b); }

  std::shared_ptr<const LoadedSnapshot> loaded_;
  RecordFilter filter_;

 private:
  void rebuild();
  std::vector<uint32_t> rows_;
  int sort_column_ = -1;
  Qt::SortOrder sort_order_ = Qt::AscendingOrder;
  std::vector<uint8_t> frame_match_;         // per FrameId, for filter_.frame_text
  mutable std::vector<int8_t> stack_match_;  // per StackId: -1 unknown, 0/1
};

QString formatBytes(uint64_t bytes);
QString formatAddress(uint64_t address);

}  // namespace cudascope::gui
