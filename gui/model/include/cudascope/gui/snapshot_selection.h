#pragma once
// What the memory views of one snapshot share: the selected allocation, the visible time
// window of the time-based views and the x axis they use (real time, or event order as
// memory_viz draws it). Each view writes to it when the user acts and follows its signals,
// so a click on the Active memory timeline shows the block in Allocator state at that entry,
// its row in the tables, its span on the segment timeline and its stack in the stack panel.
//
// QtCore only; lives on the UI thread. Setters emit only on change, so views that both
// follow and write a value do not loop.

#include <cudascope/gui/loaded_snapshot.h>

#include <QObject>

#include <cstdint>
#include <memory>

namespace cudascope::gui {

// One allocation (or a free block, or an OOM entry) the user picked.
struct MemorySelection {
  bool valid = false;
  uint32_t interval = UINT32_MAX;  // into LoadedSnapshot::allocations (UINT32_MAX: not an allocation's)
  uint32_t entry = UINT32_MAX;     // the trace entry that made it (UINT32_MAX: before the trace, or none)
  uint32_t end_entry = UINT32_MAX; // the trace entry that freed it (UINT32_MAX: live at the end)
  uint64_t address = 0, size = 0;
  analysis::StackId stack = 0;
  friend bool operator==(const MemorySelection&, const MemorySelection&) = default;
};

class SnapshotSelection : public QObject {
  Q_OBJECT
 public:
  enum class Axis { time, event_order };
  using QObject::QObject;

  void setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded);
  const std::shared_ptr<const LoadedSnapshot>& snapshot() const { return loaded_; }

  const MemorySelection& selection() const { return selection_; }
  void select(const MemorySelection& selection);
  // The allocation of `allocations` interval `interval`.
  void selectInterval(uint32_t interval);
  // The trace entry `entry`: the allocation it made or freed, or the entry itself (an OOM,
  // a segment event) when it belongs to no allocation.
  void selectEntry(uint32_t entry);
  // The block at `address`: the allocation live there at the end, else the block itself.
  void selectBlock(uint64_t address, uint64_t size, analysis::StackId stack, uint32_t alloc_entry = UINT32_MAX);
  void clear();

  // The time-based views' window, in the axis' units (microseconds or entry indices).
  qint64 rangeBegin() const { return t0_; }
  qint64 rangeEnd() const { return t1_; }
  void setRange(qint64 t0, qint64 t1);
  Axis axis() const { return axis_; }
  void setAxis(Axis axis);

 signals:
  void selectionChanged(const cudascope::gui::MemorySelection& selection);
  void rangeChanged(qint64 t0, qint64 t1);
  void axisChanged(cudascope::gui::SnapshotSelection::Axis axis);

 private:
  std::shared_ptr<const LoadedSnapshot> loaded_;
  MemorySelection selection_;
  qint64 t0_ = 0, t1_ = 0;
  Axis axis_ = Axis::time;
};

}  // namespace cudascope::gui
