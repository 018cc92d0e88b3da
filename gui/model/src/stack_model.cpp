#include <cudascope/gui/stack_model.h>

namespace cudascope::gui {

void StackModel::setStack(std::shared_ptr<const analysis::Snapshot> snapshot, analysis::StackId stack) {
  beginResetModel();
  snapshot_ = std::move(snapshot);
  stack_ = stack;
  endResetModel();
}

void StackModel::clear() { setStack(nullptr, 0); }

int StackModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !snapshot_) return 0;
  return static_cast<int>(snapshot_->stack(stack_).size());
}

QVariant StackModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !snapshot_ || index.row() >= rowCount()) return {};
  const auto frame = snapshot_->stack(stack_)[static_cast<size_t>(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return QString::fromStdString(snapshot_->frame_text(frame));
  return {};
}

}  // namespace cudascope::gui
