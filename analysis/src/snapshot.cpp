#include <cudascope/analysis/snapshot.h>

#include <algorithm>
#include <array>

namespace cudascope::analysis {
namespace {
constexpr std::array<std::string_view, kActionCount> kActionNames = {
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "segment_map", "segment_unmap", "snapshot", "oom", "annotate"};
constexpr std::array<std::string_view, 3> kBlockStateNames = {"active_allocated", "active_pending_free",
                                                              "inactive"};
}  // namespace

std::string_view action_name(Action action) {
  const auto i = static_cast<size_t>(action);
  return i < kActionNames.size() ? kActionNames[i] : std::string_view("unknown");
}

std::optional<Action> parse_action(std::string_view text) {
  for (size_t i = 0; i < kActionNames.size(); ++i)
    if (kActionNames[i] == text) return static_cast<Action>(i);
  return std::nullopt;
}

std::string_view block_state_name(BlockState state) { return kBlockStateNames[static_cast<size_t>(state)]; }

std::optional<BlockState> parse_block_state(std::string_view text) {
  for (size_t i = 0; i < kBlockStateNames.size(); ++i)
    if (kBlockStateNames[i] == text) return static_cast<BlockState>(i);
  // The allocator writes "active_pending_free"; torch.cuda.memory._snapshot's docstring calls
  // the same state "active_awaiting_free", and tools writing snapshots from it use that name.
  if (text == "active_awaiting_free") return BlockState::active_pending_free;
  return std::nullopt;
}

std::string Snapshot::frame_text(FrameId id) const {
  const Frame& f = frames.get(id);
  std::string text(str(f.name));
  text += " (";
  text += str(f.filename);
  text += ':';
  text += std::to_string(f.line);
  text += ')';
  return text;
}

std::string Snapshot::stack_text(StackId id) const {
  std::string text;
  for (FrameId f : stack(id)) {
    text += frame_text(f);
    text += '\n';
  }
  return text;
}

bool Snapshot::stack_contains(StackId id, std::string_view needle) const {
  for (FrameId f : stack(id)) {
    const Frame& frame = frames.get(f);
    if (str(frame.name).find(needle) != std::string_view::npos ||
        str(frame.filename).find(needle) != std::string_view::npos)
      return true;
  }
  return false;
}

DeviceTrace Snapshot::device_trace(int device) const {
  for (const auto& d : devices)
    if (d.device == device) return d;
  return DeviceTrace{device, 0, 0};
}

std::vector<int> Snapshot::device_ids() const {
  std::vector<int> ids;
  for (const auto& s : segments) ids.push_back(s.device);
  for (const auto& d : devices) ids.push_back(d.device);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace cudascope::analysis
