#pragma once
// The allocator's state after any trace entry of a loaded snapshot's device, for the
// allocator-state tab: checkpointed incremental replay (analysis::AllocatorReplay) and the
// line that describes the entry a state follows. Widgets reach the replay only through this
// class, so the rule for what a state is and how it is described lives in the model.
//
// Not thread-safe: stateAfter() moves the replay's cursor. Use from one thread.

#include <cudascope/analysis/allocator_replay.h>
#include <cudascope/gui/loaded_snapshot.h>

#include <QString>

#include <cstdint>
#include <memory>

namespace cudascope::gui {

class AllocatorStates {
 public:
  explicit AllocatorStates(std::shared_ptr<const LoadedSnapshot> loaded);
  ~AllocatorStates();
  AllocatorStates(const AllocatorStates&) = delete;
  AllocatorStates& operator=(const AllocatorStates&) = delete;

  // The range a slider covers: firstEntry() - 1 (before the first entry) to lastEntry().
  // Absolute trace-entry indices of the shown device; lastEntry() < firstEntry() when the
  // device has no entries.
  std::int64_t firstEntry() const;
  std::int64_t lastEntry() const;
  bool hasEntry(std::int64_t entry) const { return entry >= firstEntry() && entry <= lastEntry(); }

  // The state after `entry` (clamped to the range).
  analysis::AllocatorState stateAfter(std::int64_t entry);
  // Whether `state` is the one after the last entry: only there do the snapshot's own blocks
  // say how many bytes each allocation requested.
  bool isFinal(const analysis::AllocatorState& state) const { return state.entry == lastEntry(); }

  // "alloc  0x7f00...  2.0 MiB at 1.250 ms   (replayed 12 entries from the nearest checkpoint;
  // checkpoints every 256)", or "Before the first trace entry". Times from the first entry.
  // Describes the state stateAfter() returned last.
  QString describe(const analysis::AllocatorState& state) const;

 private:
  std::shared_ptr<const LoadedSnapshot> loaded_;
  analysis::AllocatorReplay replay_;
};

}  // namespace cudascope::gui
