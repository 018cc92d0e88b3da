#pragma once
// Comparing two snapshots: live memory (allocated and pending-free blocks) grouped by the
// frame that allocated it, so "what grew between A and B" is one sorted table.

#include <cudascope/analysis/snapshot.h>
#include <cudascope/analysis/stack_frames.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

// Both skip the frames a reader never sees (the unwinder's and the allocators', stack_frames.h).
enum class GroupBy {
  top_frame,   // the innermost visible frame of the allocating stack
  user_frame,  // the innermost user frame (outside torch, Python and libraries), else the top frame
};

struct CompareRow {
  std::string frame;  // "name (filename:line)", or "<no stack recorded>"
  uint64_t bytes_a = 0, bytes_b = 0;
  uint64_t count_a = 0, count_b = 0;
  int64_t delta() const { return static_cast<int64_t>(bytes_b) - static_cast<int64_t>(bytes_a); }
};

struct Comparison {
  std::vector<CompareRow> rows;  // largest growth first
  uint64_t total_a = 0, total_b = 0;
};

Comparison compare_snapshots(const Snapshot& a, const Snapshot& b, GroupBy group = GroupBy::user_frame);

// The group key compare_snapshots() uses for one stack: "name (filename:line)", or
// "<no stack recorded>" when no visible frame is left.
std::string group_key(const FrameIndex& frames, StackId stack, GroupBy group);
// Same, classifying the snapshot's frames first (for a single query).
std::string group_key(const Snapshot& snapshot, StackId stack, GroupBy group);

}  // namespace cudascope::analysis
