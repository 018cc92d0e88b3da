#pragma once
// The derived figures as a two-column table (figure, value), overall then per stream.
// Qt::UserRole holds the raw number.

#include <cudascope/analysis/figures.h>

#include <QAbstractTableModel>

#include <vector>

namespace cudascope::gui {

class FiguresModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setFigures(const analysis::Figures& figures);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString name;
    QString text;
    QVariant value;
  };
  std::vector<Row> rows_;
};

}  // namespace cudascope::gui
