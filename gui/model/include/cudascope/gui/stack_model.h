#pragma once
// The frames of one stack, innermost first: "name (filename:line)" per row.

#include <cudascope/analysis/snapshot.h>

#include <QAbstractListModel>

#include <memory>

namespace cudascope::gui {

class StackModel : public QAbstractListModel {
  Q_OBJECT
 public:
  using QAbstractListModel::QAbstractListModel;
  void setStack(std::shared_ptr<const analysis::Snapshot> snapshot, analysis::StackId stack);
  void clear();
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const analysis::Snapshot> snapshot_;
  analysis::StackId stack_ = 0;
};

}  // namespace cudascope::gui
