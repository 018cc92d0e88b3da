#pragma once
// The frames of one stack, innermost first: "name (filename:line)" per row.

#include <cudascope/snapshot/snapshot.h>

#include <QAbstractListModel>

#include <memory>

namespace cudascope::gui {

class StackModel : public QAbstractListModel {
  Q_OBJECT
 public:
  using QAbstractListModel::QAbstractListModel;
  void setStack(std::shared_ptr<const snapshot::Snapshot> snapshot, snapshot::StackId stack);
  void clear();
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const snapshot::Snapshot> snapshot_;
  snapshot::StackId stack_ = 0;
};

}  // namespace cudascope::gui
