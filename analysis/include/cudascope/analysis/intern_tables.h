#pragma once
// Interning tables: each distinct string, frame and stack is stored once and named by a
// small id. Snapshots repeat the same few hundred frames millions of times, so this is
// what keeps a loaded snapshot at a fraction of its file size.
//
// Not thread-safe for writing; concurrent reads of a table nobody writes are fine.

#include <cudascope/analysis/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cudascope::analysis {

class StringTable {
 public:
  StringTable();
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;

  StringId intern(std::string_view text);
  // The id of `text` if it was interned, else nullopt-like kNone.
  static constexpr StringId kNone = UINT32_MAX;
  StringId find(std::string_view text) const;
  std::string_view get(StringId id) const { return storage_[id]; }
  size_t size() const { return storage_.size(); }

 private:
  std::deque<std::string> storage_;  // a deque never moves its elements: views stay valid
  std::unordered_map<std::string_view, StringId> index_;
};

class FrameTable {
 public:
  FrameId intern(const Frame& frame);
  const Frame& get(FrameId id) const { return frames_[id]; }
  size_t size() const { return frames_.size(); }

 private:
  struct Hash {
    size_t operator()(const Frame& f) const noexcept {
      return (uint64_t{f.name} * 0x9E3779B97F4A7C15ull) ^ (uint64_t{f.filename} << 20) ^ uint64_t(uint32_t(f.line));
    }
  };
  std::vector<Frame> frames_;
  std::unordered_map<Frame, FrameId, Hash> index_;
};

// Stacks are sequences of frames, innermost first (as PyTorch writes them).
class StackTable {
 public:
  StackTable();
  StackId intern(std::span<const FrameId> frames);
  std::span<const FrameId> get(StackId id) const {
    return {frame_ids_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
  }
  size_t size() const { return offsets_.size() - 1; }

 private:
  std::vector<FrameId> frame_ids_;
  std::vector<uint32_t> offsets_;  // stack i is frame_ids_[offsets_[i], offsets_[i+1])
  std::unordered_map<uint64_t, std::vector<StackId>> index_;  // content hash -> candidates
};

}  // namespace cudascope::analysis
