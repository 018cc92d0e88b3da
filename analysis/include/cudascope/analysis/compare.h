#pragma once
// Comparing two snapshots: live memory (allocated and pending-free blocks) grouped by the
// frame that allocated it, or by the NVTX range it was allocated in, so "what grew between
// A and B" is one sorted table. The viewer's Compare tab and `cudascope diff` both use it.

#include <cudascope/analysis/snapshot.h>
#include <cudascope/analysis/stack_frames.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

// The frame groupings skip the frames a reader never sees (the unwinder's and the
// allocators', stack_frames.h).
enum class GroupBy {
  top_frame,   // the innermost visible frame of the allocating stack
  user_frame,  // the innermost user frame (outside torch, Python and libraries), else the top frame
  nvtx_range,  // the NVTX ranges open at the block's alloc entry: its user_metadata (cudascope
               // writes the range stack there, "outer;inner"), else the innermost
               // external_annotations range (PyTorch's record_function START/END) open at its
               // time; "<no NVTX range>" when neither, "<allocated before the trace>" when the
               // trace holds no alloc entry for the block
};

struct CompareRow {
  std::string frame;  // the group: "name (filename:line)", "<no stack recorded>", or a range
  uint64_t bytes_a = 0, bytes_b = 0;
  uint64_t count_a = 0, count_b = 0;
  int64_t delta() const { return static_cast<int64_t>(bytes_b) - static_cast<int64_t>(bytes_a); }
};

struct Comparison {
  std::vector<CompareRow> rows;  // largest growth first
  uint64_t total_a = 0, total_b = 0;
};

Comparison compare_snapshots(const Snapshot& a, const Snapshot& b, GroupBy group = GroupBy::user_frame);

// The NVTX group of a trace entry (see GroupBy::nvtx_range); for one query. compare_snapshots
// indexes the annotations once instead.
std::string nvtx_range_key(const Snapshot& snapshot, const TraceEntry& entry);

// The group key compare_snapshots() uses for one stack: "name (filename:line)", or
// "<no stack recorded>" when no visible frame is left.
std::string group_key(const FrameIndex& frames, StackId stack, GroupBy group);
// Same, classifying the snapshot's frames first (for a single query).
std::string group_key(const Snapshot& snapshot, StackId stack, GroupBy group);

}  // namespace cudascope::analysis
