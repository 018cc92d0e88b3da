#pragma once
// A table of segments, blocks or trace entries with its filter bar (size range, stream,
// action or state, frame text applied as you type), searches by address and by frame text,
// and the stack of the selected row (allocator and unwinder frames hidden unless asked,
// the user frame selected and scrolled into view). Rows open in file order; a header click
// sorts. A row the user picks is announced (recordActivated) so the other views follow.
// Ctrl+C in the table or the stack list copies the current cell's whole text (cell_copy.h).

#include <cudascope/gui/loaded_snapshot.h>

#include <QWidget>

class QComboBox;
class QLineEdit;
class QTimer;
class QTableView;
class QLabel;
class QListView;

namespace cudascope::gui {

class RecordTableModel;
class StackModel;

class RecordTablePage : public QWidget {
  Q_OBJECT
 public:
  enum class Kind { segments, blocks, trace };
  RecordTablePage(Kind kind, QWidget* parent = nullptr);
  void setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded);
  RecordTableModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  StackModel* stackModel() const { return stack_; }
  QListView* stackView() const { return stack_view_; }
  QLineEdit* frameFilter() const { return frame_; }
  QLabel* statusLabel() const { return status_; }
  // Selects the next row covering `address` / whose stack mentions `text`; false if none.
  bool findAddress(uint64_t address);
  bool findFrame(const QString& text);
  // Selects the row of `record` (clearing the frame filter if it hides it) without
  // announcing it; false when the filters hide it.
  bool selectRecord(uint32_t record);
  // Selects the first row covering `address`, without announcing it.
  bool selectAddress(uint64_t address);

 signals:
  void recordActivated(quint32 record);

 private:
  void applyFilter();
  void selectRow(int row);
  void fitColumns();
  void updateStackLabel();

  Kind kind_;
  std::shared_ptr<const LoadedSnapshot> loaded_;
  RecordTableModel* model_;
  StackModel* stack_;
  QTableView* table_;
  QLineEdit* min_size_;
  QLineEdit* max_size_;
  QComboBox* stream_;
  QComboBox* action_;
  QLineEdit* frame_;
  QLineEdit* search_;
  QLabel* status_;
  QLabel* stack_label_;
  QTimer* filter_timer_;
  QListView* stack_view_;
  bool quiet_ = false;  // selecting on another view's behalf
};

// Parses "1048576", "512KiB", "1.5 MB", "2g" into bytes; nullopt-like false on bad text.
bool parseBytes(const QString& text, uint64_t& out);

}  // namespace cudascope::gui
