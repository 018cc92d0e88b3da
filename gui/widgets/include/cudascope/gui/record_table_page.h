#pragma once
// A table of segments, blocks or trace entries with its filter bar (size range, stream,
// action or state, frame text applied as you type), searches by address and by frame text,
// and the stack of the selected row (allocator and unwinder frames hidden unless asked).

#include <cudascope/gui/loaded_snapshot.h>

#include <QWidget>

class QComboBox;
class QLineEdit;
class QTimer;
class QTableView;
class QLabel;

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
  QLineEdit* frameFilter() const { return frame_; }
  QLabel* statusLabel() const { return status_; }
  // Selects the next row covering `address` / whose stack mentions `text`; false if none.
  bool findAddress(uint64_t address);
  bool findFrame(const QString& text);

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
};

// Parses "1048576", "512KiB", "1.5 MB", "2g" into bytes; nullopt-like false on bad text.
bool parseBytes(const QString& text, uint64_t& out);

}  // namespace cudascope::gui
