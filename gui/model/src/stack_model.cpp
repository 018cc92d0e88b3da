#include <cudascope/gui/stack_model.h>

namespace cudascope::gui {

void StackModel::setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack) {
  loaded_ = std::move(loaded);
  stack_ = stack;
  rebuild();
}

void StackModel::setShowHidden(bool show) {
  show_hidden_ = show;
  rebuild();
}

void StackModel::clear() { setStack(nullptr, 0); }

void StackModel::rebuild() {
  beginResetModel();
  rows_.clear();
  hidden_ = 0;
  if (loaded_) {
    const auto all = loaded_->snapshot->stack(stack_);
    rows_ = show_hidden_ ? std::vector<analysis::FrameId>(all.begin(), all.end()) : loaded_->frames->visible(stack_);
    hidden_ = static_cast<int>(all.size() - rows_.size());
  }
  endResetModel();
}

int StackModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

QVariant StackModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !loaded_ || index.row() >= rowCount()) return {};
  const analysis::FrameId frame = rows_[static_cast<size_t>(index.row())];
  const bool is_user = loaded_->frames->user_frame(stack_) == frame;
  switch (role) {
    case Qt::DisplayRole:
    case Qt::ToolTipRole: return QString::fromStdString(loaded_->snapshot->frame_text(frame));
    case Qt::UserRole: return is_user;
    default: return {};
  }
}

}  // namespace cudascope::gui
