#pragma once
// Compact value types for one allocator snapshot, in PyTorch's schema
// (torch.cuda.memory._snapshot()): segments holding blocks, and per-device trace entries.
// Strings, frames and whole stacks are interned, so an entry is a few machine words.

#include <cstdint>
#include <optional>
#include <string_view>

namespace cudascope::analysis {

using StringId = uint32_t;  // index into Snapshot::strings; 0 is the empty string
using FrameId = uint32_t;   // index into Snapshot::frames
using StackId = uint32_t;   // index into Snapshot::stacks; 0 is the empty stack
using StreamId = uint16_t;  // index into Snapshot::streams (the raw cudaStream_t values)

struct Frame {
  StringId name = 0;
  StringId filename = 0;
  int32_t line = 0;
  friend bool operator==(const Frame&, const Frame&) = default;
};

// Trace actions, named as PyTorch writes them.
enum class Action : uint8_t {
  alloc,
  free_requested,
  free_completed,
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  snapshot,
  oom,
  annotate,  // metadata attached to a live allocation (_annotate_memory): no memory changes
  count_     // number of actions; not an action
};
inline constexpr int kActionCount = static_cast<int>(Action::count_);

std::string_view action_name(Action action);
std::optional<Action> parse_action(std::string_view text);

enum class BlockState : uint8_t { active_allocated, active_pending_free, inactive };
std::string_view block_state_name(BlockState state);
// Both snapshot readers' one reading of state names; "active_awaiting_free" (the name in
// torch.cuda.memory._snapshot's docstring) is active_pending_free.
std::optional<BlockState> parse_block_state(std::string_view text);

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;
  StackId stack = 0;
  uint32_t segment = 0;  // index of the owning segment
  BlockState state = BlockState::inactive;
};

struct Segment {
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t allocated_size = 0;
  uint64_t active_size = 0;
  uint64_t requested_size = 0;
  int64_t pool_id[2] = {0, 0};
  uint32_t first_block = 0;  // blocks [first_block, first_block + block_count) of Snapshot::blocks
  uint32_t block_count = 0;
  StackId stack = 0;
  StringId segment_type = 0;  // "small" / "large"
  int16_t device = 0;
  StreamId stream = 0;
  bool is_expandable = false;
};

struct TraceEntry {
  int64_t time_us = 0;  // 0 when the producer did not record times
  uint64_t addr = 0;
  uint64_t size = 0;
  StackId stack = 0;
  StringId compile_context = 0;
  StringId user_metadata = 0;
  StreamId stream = 0;
  int16_t device = 0;
  Action action = Action::alloc;
};

}  // namespace cudascope::analysis
