#include <cudascope/gui/stack_model.h>

namespace cudascope::gui {
namespace {

// A frame's tooltip: its full name, up to kMaxTooltipNameChars, and how long a longer one is.
QString frame_tooltip(const LoadedSnapshot& loaded, analysis::FrameId frame) {
  const std::string_view name = loaded.snapshot->str(loaded.snapshot->frames.get(frame).name);
  return loaded.frameLabel(frame, true, kMaxTooltipNameChars) + lengthNote(name, kMaxTooltipNameChars);
}

}  // namespace

void StackModel::setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack) {
  loaded_ = std::move(loaded);
  stack_ = stack;
  expanded_.clear();
  rebuild();
}

void StackModel::setShowHidden(bool show) {
  show_hidden_ = show;
  expanded_.clear();
  rebuild();
}

void StackModel::setFullNames(bool full) {
  full_names_ = full;
  labels_.assign(rows_.size(), QString());
  if (!rows_.empty()) emit dataChanged(index(0), index(rowCount() - 1));
}

void StackModel::setExpanded(int row, bool expanded) {
  if (row < 0 || row >= rowCount()) return;
  const Row& r = rows_[size_t(row)];
  if (expanded && r.count > 1) expanded_.insert(r.first);
  else if (!expanded) {
    // Closing any frame of an opened run closes the run.
    for (auto it = expanded_.begin(); it != expanded_.end(); ++it)
      if (*it <= r.first) {
        size_t end = *it;
        while (end < frames_.size() && loaded_->dispatcherFrame(frames_[end])) ++end;
        if (r.first < end) {
          expanded_.erase(it);
          break;
        }
      }
  }
  rebuild();
}

void StackModel::clear() { setStack(nullptr, 0); }

void StackModel::rebuild() {
  beginResetModel();
  frames_.clear();
  rows_.clear();
  hidden_ = 0;
  if (loaded_) {
    const auto all = loaded_->snapshot->stack(stack_);
    frames_ = show_hidden_ ? std::vector<analysis::FrameId>(all.begin(), all.end()) : loaded_->frames->visible(stack_);
    hidden_ = static_cast<int>(all.size() - frames_.size());
    for (size_t i = 0; i < frames_.size();) {
      size_t j = i;
      while (j < frames_.size() && loaded_->dispatcherFrame(frames_[j])) ++j;
      if (j - i >= 2 && !expanded_.count(i)) {
        rows_.push_back({i, j - i});
        i = j;
        continue;
      }
      for (size_t k = i; k < std::max(j, i + 1); ++k) rows_.push_back({k, 1});
      i = std::max(j, i + 1);
    }
  }
  labels_.assign(rows_.size(), QString());
  endResetModel();
}

int StackModel::userRow() const {
  if (!loaded_) return -1;
  const auto user = loaded_->frames->user_frame(stack_);
  if (!user) return -1;
  for (size_t r = 0; r < rows_.size(); ++r)
    if (rows_[r].count == 1 && frames_[rows_[r].first] == *user) return int(r);
  return -1;
}

QString StackModel::rowText(size_t row, qsizetype max_chars) const {
  const Row& r = rows_[row];
  const analysis::FrameId frame = frames_[r.first];
  if (r.count == 1) return loaded_->frameLabel(frame, full_names_, max_chars);
  return QStringLiteral("\u25b8 %1 C++ library frames: %2 \u2026 %3")
      .arg(r.count)
      .arg(loaded_->frameLabel(frame, full_names_, max_chars),
           loaded_->frameLabel(frames_[r.first + r.count - 1], full_names_, max_chars));
}

QString StackModel::label(size_t row) const {
  // Made once per row: a short name is shortened from the whole name, too slow for every
  // repaint of a name of megabytes.
  QString& text = labels_[row];
  if (text.isNull()) text = rowText(row, kMaxLabelChars);
  return text;
}

QString StackModel::copyText() const { return loaded_ ? loaded_->fullStackText(stack_) : QString(); }

int StackModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

QVariant StackModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !loaded_ || index.row() >= rowCount()) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  const analysis::FrameId frame = frames_[r.first];
  if (r.count > 1) {
    switch (role) {
      case Qt::DisplayRole: return label(size_t(index.row()));
      case FullTextRole: return rowText(size_t(index.row()), kWhole);
      case Qt::ToolTipRole: {
        QString text;
        for (size_t k = r.first; k < r.first + r.count; ++k) text += loaded_->frameLabel(frames_[k], true) + '\n';
        return text.trimmed();
      }
      case Qt::UserRole: return false;
      case FoldRole: return int(r.count);
      default: return {};
    }
  }
  switch (role) {
    case Qt::DisplayRole: return label(size_t(index.row()));
    case FullTextRole: return rowText(size_t(index.row()), kWhole);
    case Qt::ToolTipRole: return frame_tooltip(*loaded_, frame);
    case Qt::UserRole: return loaded_->frames->user(frame);
    case FoldRole: return 0;
    default: return {};
  }
}

}  // namespace cudascope::gui
