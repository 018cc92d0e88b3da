#pragma once
// Which frames of an allocation stack a reader is shown, and which one names the allocation.
//
// PyTorch's stacks recorded with C++ frames (`_record_memory_history(stacks="all")`) begin
// with the unwinder's and the caching allocator's own frames (torch::unwind::unwind,
// torch::CapturedTraceback::gather, c10::cuda::CUDACachingAllocator::...), ours with the
// runtime's (cudascope::cuda::...). They say nothing about who allocated, so they are hidden
// the way pytorch.org/memory_viz hides them, together with the interpreter's glue frames
// memory_viz drops (PyEval_*, ceval.c, ...). Of the frames left, the first *user* frame
// (outside torch, site-packages, the Python runtime and shared libraries) names the
// allocation in tables and groups it in comparisons.
//
// FrameIndex classifies each interned frame once; its queries are const and may run
// concurrently once built.

#include <cudascope/analysis/snapshot.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace cudascope::analysis {

// True for frames hidden from stacks: the unwinder's, the allocators', the interpreter's glue.
bool hidden_frame(std::string_view name, std::string_view filename);
// True for frames of libraries (torch, site-packages, the Python runtime, C++ runtimes, shared
// objects): shown, but never the user frame while a user frame exists.
bool library_frame(std::string_view name, std::string_view filename);

class FrameIndex {
 public:
  // Classifies every frame of `snapshot` (which must outlive the index).
  explicit FrameIndex(const Snapshot& snapshot);

  const Snapshot& snapshot() const { return *snapshot_; }
  bool hidden(FrameId frame) const { return kind_[frame] == Kind::hidden; }
  bool user(FrameId frame) const { return kind_[frame] == Kind::user; }
  // The frames of a stack a reader sees, innermost first.
  std::vector<FrameId> visible(StackId stack) const;
  // How many frames of the stack are hidden.
  size_t hidden_count(StackId stack) const;
  // The innermost user frame; else the innermost visible frame; nullopt for a stack with
  // no visible frame (none recorded, or only the allocator's own).
  std::optional<FrameId> user_frame(StackId stack) const;
  // The innermost visible frame (what "top frame" means once hidden frames are dropped).
  std::optional<FrameId> top_frame(StackId stack) const;

  // Per frame: whether its displayed text, "name (filename:line)", contains `needle`
  // ignoring ASCII case. So "train.py:42", "step (train" and "optimizer" all match what
  // the viewer shows. Build once per filter text, then ask stack_matches().
  std::vector<uint8_t> match_frames(std::string_view needle) const;
  // Whether any visible frame of `stack` is set in `matches` (from match_frames).
  bool stack_matches(StackId stack, const std::vector<uint8_t>& matches) const;

 private:
  enum class Kind : uint8_t { hidden, library, user };
  const Snapshot* snapshot_;
  std::vector<Kind> kind_;  // per FrameId
};

}  // namespace cudascope::analysis
