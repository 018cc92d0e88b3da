#include <cudascope/analysis/intern_tables.h>

namespace cudascope::analysis {

StringTable::StringTable() { intern(""); }

StringId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  const auto id = static_cast<StringId>(storage_.size());
  storage_.emplace_back(text);
  index_.emplace(storage_.back(), id);
  return id;
}

StringId StringTable::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? kNone : it->second;
}

FrameId FrameTable::intern(const Frame& frame) {
  auto [it, inserted] = index_.try_emplace(frame, static_cast<FrameId>(frames_.size()));
  if (inserted) frames_.push_back(frame);
  return it->second;
}

StackTable::StackTable() : offsets_{0, 0} {}  // stack 0: the empty stack

StackId StackTable::intern(std::span<const FrameId> frames) {
  if (frames.empty()) return 0;
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the frame ids
  for (FrameId f : frames) hash = (hash ^ f) * 0x100000001b3ull;
  auto& candidates = index_[hash];
  for (StackId id : candidates) {
    auto known = get(id);
    if (known.size() == frames.size() && std::equal(known.begin(), known.end(), frames.begin())) return id;
  }
  const auto id = static_cast<StackId>(offsets_.size() - 1);
  frame_ids_.insert(frame_ids_.end(), frames.begin(), frames.end());
  offsets_.push_back(static_cast<uint32_t>(frame_ids_.size()));
  candidates.push_back(id);
  return id;
}

}  // namespace cudascope::analysis
