#include <cudascope/gui/record_table_model.h>

#include <cudascope/util/byte_format.h>

#include <algorithm>
#include <numeric>

namespace cudascope::gui {

QString formatBytes(uint64_t bytes) { return QString::fromStdString(util::format_bytes(bytes)); }

QString formatAddress(uint64_t address) { return QStringLiteral("0x") + QString::number(address, 16); }

void RecordTableModel::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded) {
  beginResetModel();
  loaded_ = std::move(loaded);
  stack_match_.clear();
  frame_match_ = loaded_ && !filter_.frame_text.isEmpty() ? loaded_->frames->match_frames(filter_.frame_text.toStdString())
                                                          : std::vector<uint8_t>{};
  rows_.clear();
  endResetModel();
  rebuild();
}

void RecordTableModel::setFilter(const RecordFilter& filter) {
  filter_ = filter;
  stack_match_.clear();
  frame_match_ = loaded_ && !filter_.frame_text.isEmpty() ? loaded_->frames->match_frames(filter_.frame_text.toStdString())
                                                          : std::vector<uint8_t>{};
  rebuild();
}

void RecordTableModel::rebuild() {
  beginResetModel();
  rows_.clear();
  if (loaded_) {
    const size_t n = recordCount();
    rows_.reserve(n);
    for (uint32_t r = 0; r < n; ++r)
      if (accepts(r)) rows_.push_back(r);
    if (sort_column_ >= 0) {
      std::stable_sort(rows_.begin(), rows_.end(), [&](uint32_t a, uint32_t b) { return less(a, b, sort_column_); });
      if (sort_order_ == Qt::DescendingOrder) std::reverse(rows_.begin(), rows_.end());
    }
  }
  endResetModel();
}

bool RecordTableModel::stackMatches(analysis::StackId stack) const {
  if (filter_.frame_text.isEmpty()) return true;
  if (stack_match_.size() != snap().stacks.size()) stack_match_.assign(snap().stacks.size(), -1);
  int8_t& m = stack_match_[stack];
  if (m < 0) m = loaded_->frames->stack_matches(stack, frame_match_) ? 1 : 0;
  return m == 1;
}

QString RecordTableModel::frameText(analysis::StackId stack) const { return loaded_->userFrameText(stack); }

QString RecordTableModel::fullFrameText(analysis::StackId stack) const { return loaded_->userFrameText(stack, kWhole); }

int RecordTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RecordTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : columns(); }

QVariant RecordTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size()) || index.column() >= columns()) return {};
  const uint32_t record = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return display(record, index.column());
    case Qt::UserRole: return raw(record, index.column());
    case Qt::ToolTipRole: {
      const QString text = loaded_->stackText(stackOf(record));
      return text.isEmpty() ? QVariant() : QVariant(text);
    }
    case HighlightRole: return highlighted(record);
    case FullTextRole: {  // text columns hold their whole text in the raw role
      const QVariant whole = raw(record, index.column());
      return whole.typeId() == QMetaType::QString ? whole : display(record, index.column());
    }
    default: return {};
  }
}

QVariant RecordTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Horizontal) return section >= 0 && section < columns() ? QVariant(header(section)) : QVariant();
  return section + 1;
}

void RecordTableModel::sort(int column, Qt::SortOrder order) {
  if (column >= columns()) return;
  sort_column_ = column < 0 ? -1 : column;
  sort_order_ = order;
  emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
  const QModelIndexList before = persistentIndexList();
  std::vector<uint32_t> old_records;
  for (const QModelIndex& i : before) old_records.push_back(rows_[static_cast<size_t>(i.row())]);
  if (sort_column_ < 0) {
    std::sort(rows_.begin(), rows_.end());  // record order is file order
  } else {
    std::stable_sort(rows_.begin(), rows_.end(), [&](uint32_t a, uint32_t b) { return less(a, b, column); });
    if (order == Qt::DescendingOrder) std::reverse(rows_.begin(), rows_.end());
  }
  QModelIndexList after;
  for (int k = 0; k < before.size(); ++k) after.push_back(index(rowOfRecord(old_records[static_cast<size_t>(k)]), before[k].column()));
  changePersistentIndexList(before, after);
  emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

int RecordTableModel::rowOfRecord(uint32_t record) const {
  auto it = std::find(rows_.begin(), rows_.end(), record);
  return it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

int RecordTableModel::findAddress(uint64_t address, int after) const {
  for (size_t r = static_cast<size_t>(after + 1); r < rows_.size(); ++r)
    if (covers(rows_[r], address)) return static_cast<int>(r);
  return -1;
}

int RecordTableModel::findFrameText(const QString& text, int after) const {
  const auto matches = loaded_->frames->match_frames(text.toStdString());
  for (size_t r = static_cast<size_t>(after + 1); r < rows_.size(); ++r)
    if (loaded_->frames->stack_matches(stackOf(rows_[r]), matches)) return static_cast<int>(r);
  return -1;
}

}  // namespace cudascope::gui
