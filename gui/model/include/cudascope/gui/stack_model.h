#pragma once
// The frames of one stack, innermost first: "name (filename:line)" per row. The allocator's
// and unwinder's own frames are hidden unless setShowHidden(true); the user frame (the one
// Frame columns show) has Qt::UserRole true, so a view can mark it.

#include <cudascope/gui/loaded_snapshot.h>

#include <QAbstractListModel>

#include <memory>
#include <vector>

namespace cudascope::gui {

class StackModel : public QAbstractListModel {
  Q_OBJECT
 public:
  using QAbstractListModel::QAbstractListModel;
  void setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack);
  void setShowHidden(bool show);
  void clear();
  // Frames of the stack hidden from the rows (0 while hidden frames are shown).
  int hiddenCount() const { return hidden_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  void rebuild();
  std::shared_ptr<const LoadedSnapshot> loaded_;
  analysis::StackId stack_ = 0;
  bool show_hidden_ = false;
  int hidden_ = 0;
  std::vector<analysis::FrameId> rows_;
};

}  // namespace cudascope::gui
