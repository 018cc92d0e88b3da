#include <cudascope/gui/snapshot_selection.h>

namespace cudascope::gui {

void SnapshotSelection::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded) {
  loaded_ = std::move(loaded);
  clear();
}

void SnapshotSelection::select(const MemorySelection& selection) {
  if (selection == selection_) return;
  selection_ = selection;
  emit selectionChanged(selection_);
}

void SnapshotSelection::selectInterval(uint32_t interval) {
  if (!loaded_ || interval >= loaded_->allocations->intervals().size()) return clear();
  const auto& iv = loaded_->allocations->intervals()[interval];
  MemorySelection s;
  s.valid = true;
  s.interval = interval;
  s.entry = iv.begin_entry;
  s.end_entry = iv.end_entry;
  s.address = iv.address;
  s.size = iv.size;
  s.stack = iv.stack;
  select(s);
}

void SnapshotSelection::selectEntry(uint32_t entry) {
  if (!loaded_ || entry >= loaded_->snapshot->trace.size()) return clear();
  const uint32_t interval = loaded_->interval_of_entry[entry];
  if (interval != UINT32_MAX) return selectInterval(interval);
  const auto& e = loaded_->snapshot->trace[entry];
  MemorySelection s;
  s.valid = true;
  s.entry = entry;
  s.address = e.addr;
  s.size = e.size;
  s.stack = e.stack;
  select(s);
}

void SnapshotSelection::selectBlock(uint64_t address, uint64_t size, analysis::StackId stack, uint32_t alloc_entry) {
  if (!loaded_) return;
  const uint32_t interval = loaded_->intervalAt(address, alloc_entry);
  if (interval != UINT32_MAX && loaded_->allocations->intervals()[interval].address == address)
    return selectInterval(interval);
  MemorySelection s;
  s.valid = true;
  s.entry = alloc_entry;
  s.address = address;
  s.size = size;
  s.stack = stack;
  select(s);
}

void SnapshotSelection::clear() { select(MemorySelection{}); }

void SnapshotSelection::setRange(qint64 t0, qint64 t1) {
  if (t0 == t0_ && t1 == t1_) return;
  t0_ = t0, t1_ = t1;
  emit rangeChanged(t0_, t1_);
}

void SnapshotSelection::setAxis(Axis axis) {
  if (axis == axis_) return;
  axis_ = axis;
  emit axisChanged(axis_);
}

}  // namespace cudascope::gui
