#pragma once
// The allocator's state (segments and their blocks) at any trace entry.
//
// A snapshot holds the state at its end plus a trace of what led there (often only the
// last N events: a ring buffer). So the state after entry i is found by undoing entries
// from the end, as PyTorch's own viewer does — but not from scratch on every step:
// states are checkpointed every `spacing` entries on one backward pass at construction,
// and a query replays forward or backward from the nearest checkpoint or from the
// current state, whichever is closer. Scrubbing by one entry costs one step.
//
// Not thread-safe (state_after moves an internal cursor); use one per thread.

#include <cudascope/analysis/snapshot.h>

#include <cstdint>
#include <map>
#include <vector>

namespace cudascope::analysis {

struct StateBlock {
  uint64_t address = 0;
  uint64_t size = 0;
  BlockState state = BlockState::inactive;
  uint32_t alloc_entry = UINT32_MAX;  // trace index of its alloc; UINT32_MAX when before the trace
  StackId stack = 0;
};

struct StateSegment {
  uint64_t address = 0;
  uint64_t size = 0;
  StreamId stream = 0;
  std::vector<StateBlock> blocks;  // tiling the segment, free gaps as inactive blocks
};

struct AllocatorState {
  int64_t entry = -1;  // state after this trace entry (absolute index); -1: before the trace
  std::vector<StateSegment> segments;
  uint64_t reserved_bytes = 0;
  uint64_t allocated_bytes = 0;
  uint64_t active_bytes = 0;
  uint64_t inactive_bytes = 0;
  uint64_t largest_free_block = 0;
  double external_fragmentation_ratio = 0.0;
};

class AllocatorReplay {
 public:
  // Keeps a reference to `snapshot`, which must outlive this object.
  AllocatorReplay(const Snapshot& snapshot, int device);

  // Absolute trace indices of this device's entries: [first_entry(), end_entry()).
  uint32_t first_entry() const { return range_.begin; }
  uint32_t end_entry() const { return range_.end; }
  // The state after trace entry `entry` (clamped to [first_entry()-1, end_entry()-1]).
  AllocatorState state_after(int64_t entry);
  // Entries applied or undone by the last state_after() call (for tests and benchmarks).
  size_t last_steps() const { return last_steps_; }
  size_t spacing() const { return spacing_; }
  // Trace entries that did not fit the state (e.g. a free whose alloc fell off the ring buffer).
  size_t anomalies() const { return anomalies_; }

 private:
  struct Seg {
    uint64_t size;
    StreamId stream;
  };
  struct Blk {
    uint64_t size;
    BlockState state;
    uint32_t alloc_entry;
    StackId stack;
  };
  struct Checkpoint {
    int64_t entry;
    std::vector<std::pair<uint64_t, Seg>> segs;
    std::vector<std::pair<uint64_t, Blk>> blocks;
  };
  void apply(uint32_t i);  // forward: state after i-1 -> after i
  void undo(uint32_t i);   // backward: state after i -> after i-1
  void load(const Checkpoint& c);

  const Snapshot& snap_;
  DeviceTrace range_;
  std::vector<uint32_t> partner_;  // per entry of the device: matching alloc (for frees) or UINT32_MAX
  std::map<uint64_t, Seg> segs_;
  std::map<uint64_t, Blk> blocks_;
  int64_t at_ = -1;
  std::vector<Checkpoint> checkpoints_;  // ascending entry
  size_t spacing_ = 1024;
  size_t last_steps_ = 0;
  size_t anomalies_ = 0;
};

}  // namespace cudascope::analysis
