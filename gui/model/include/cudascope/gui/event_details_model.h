#pragma once
// The details of one selected trace event as (field, value) rows: name, category, row,
// start and duration, for a communication kernel of a rank timeline how its collective is
// paired across ranks and its key under that rule, with the ranks sharing its communicator
// ("communicator and sequence number (group 3, Seq 2; ranks 0, 2)", "NCCL communicator and
// order (communicator 0x5c1f..., collective 17 of 40 on it; ranks 0, 2)": the analysis's
// collective_key), then what a CUDA user looks for first - correlation id, grid, block,
// bytes, stream, device - then every other arg, and one row per flow arrow (launch <->
// kernel) whose Qt::UserRole is the event at its other end (to jump there).
// A cell (a field, i.e. an arg's key, or a value) shows at most kMaxLabelChars of its text,
// its tooltip at most kMaxTooltipNameChars and the whole length, FullTextRole the text uncut
// (capped_text.h).

#include <cudascope/gui/trace_document.h>

#include <QAbstractTableModel>
#include <QPointer>

#include <string>
#include <string_view>
#include <vector>

namespace cudascope::gui {

// "812 ns", "12.35 us", "4.560 ms", "1.234 s".
QString formatDuration(qint64 ns);

class EventDetailsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Field, Value, ColumnCount };
  static constexpr quint32 kNone = UINT32_MAX;
  using QAbstractTableModel::QAbstractTableModel;
  // Shows `event` of `document` (kNone or a null document: nothing).
  void setEvent(TraceDocument* document, quint32 event);
  // The value shown for `field` ("" when absent; capped as its cell is), for tests and tooltips.
  QString value(const QString& field) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString field, value;                 // as the cells show them
    quint32 target = kNone;               // flow rows: the event at the other end
    std::string whole_field, whole_value;  // each uncut where its cell may cut it, else empty
  };
  void add(QString field, std::string_view value, quint32 target = kNone);
  void add(QString field, const QString& value);
  std::vector<Row> rows_;
  quint32 event_ = kNone;
};

}  // namespace cudascope::gui
