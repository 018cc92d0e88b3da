#pragma once
// The blocks of the snapshot's final state. Filter `action` is a BlockState.

#include <cudascope/gui/record_table_model.h>

namespace cudascope::gui {

class BlockTableModel : public RecordTableModel {
  Q_OBJECT
 public:
  enum Column { Segment, Address, Size, Requested, State, Stream, Frame, ColumnCount };
  using RecordTableModel::RecordTableModel;
  analysis::StackId stackOf(uint32_t record) const override { return snap().blocks[record].stack; }

 protected:
  size_t recordCount() const override { return snap().blocks.size(); }
  int columns() const override { return ColumnCount; }
  QString header(int column) const override;
  QVariant display(uint32_t record, int column) const override;
  QVariant raw(uint32_t record, int column) const override;
  bool less(uint32_t a, uint32_t b, int column) const override;
  bool accepts(uint32_t record) const override;
  bool covers(uint32_t record, uint64_t address) const override;
};

}  // namespace cudascope::gui
