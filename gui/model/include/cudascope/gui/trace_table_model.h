#pragma once
// The trace entries of all devices: one row per entry. Filter `action` is an Action.
// OOM entries are highlighted (HighlightRole).

#include <cudascope/gui/record_table_model.h>

namespace cudascope::gui {

class TraceTableModel : public RecordTableModel {
  Q_OBJECT
 public:
  enum Column { Index, Time, Action, Address, Size, Stream, Device, Frame, ColumnCount };
  using RecordTableModel::RecordTableModel;
  analysis::StackId stackOf(uint32_t record) const override { return snap().trace[record].stack; }

 protected:
  size_t recordCount() const override { return snap().trace.size(); }
  int columns() const override { return ColumnCount; }
  QString header(int column) const override;
  QVariant display(uint32_t record, int column) const override;
  QVariant raw(uint32_t record, int column) const override;
  bool less(uint32_t a, uint32_t b, int column) const override;
  bool accepts(uint32_t record) const override;
  bool covers(uint32_t record, uint64_t address) const override;
  bool highlighted(uint32_t record) const override;
};

}  // namespace cudascope::gui
