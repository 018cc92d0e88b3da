#include <cudascope/gui/loaded_snapshot.h>

#include <cudascope/analysis/cpp_names.h>

#include <algorithm>
#include <tuple>

namespace cudascope::gui {

std::shared_ptr<const LoadedSnapshot> index_snapshot(analysis::Snapshot&& snap, int device) {
  auto out = std::make_shared<LoadedSnapshot>();
  auto shared = std::make_shared<analysis::Snapshot>(std::move(snap));
  if (device < 0) {
    device = shared->devices.empty() ? (shared->segments.empty() ? 0 : shared->segments.front().device)
                                     : shared->devices.front().device;
  }
  out->device = device;
  out->figures = analysis::compute_figures(*shared);
  out->allocations = std::make_shared<analysis::StackedTimeline>(
      analysis::StackedTimeline::build(*shared, device, analysis::StackedTimeline::Kind::allocations));
  out->segments = std::make_shared<analysis::StackedTimeline>(
      analysis::StackedTimeline::build(*shared, device, analysis::StackedTimeline::Kind::segments));
  out->frames = std::make_shared<analysis::FrameIndex>(*shared);
  out->interval_of_entry.assign(shared->trace.size(), UINT32_MAX);
  const auto intervals = out->allocations->intervals();
  for (uint32_t i = 0; i < intervals.size(); ++i) {
    if (intervals[i].begin_entry < out->interval_of_entry.size()) out->interval_of_entry[intervals[i].begin_entry] = i;
    if (intervals[i].end_entry < out->interval_of_entry.size()) out->interval_of_entry[intervals[i].end_entry] = i;
  }
  out->snapshot = std::move(shared);
  return out;
}

EventOrderTimelines build_event_order_timelines(const LoadedSnapshot& loaded) {
  // StackedTimeline reads the trace, its device ranges, the segments and the blocks: a copy
  // of those with each entry's time replaced by its index.
  const analysis::Snapshot& src = *loaded.snapshot;
  analysis::Snapshot order;
  order.streams = src.streams;
  order.segments = src.segments;
  order.blocks = src.blocks;
  order.trace = src.trace;
  order.devices = src.devices;
  for (size_t i = 0; i < order.trace.size(); ++i) order.trace[i].time_us = int64_t(i);
  EventOrderTimelines out;
  out.allocations = std::make_shared<analysis::StackedTimeline>(
      analysis::StackedTimeline::build(order, loaded.device, analysis::StackedTimeline::Kind::allocations));
  out.segments = std::make_shared<analysis::StackedTimeline>(
      analysis::StackedTimeline::build(order, loaded.device, analysis::StackedTimeline::Kind::segments));
  return out;
}

QString LoadedSnapshot::userFrameText(analysis::StackId stack, qsizetype max_chars) const {
  const auto frame = frames->user_frame(stack);
  return frame ? frameLabel(*frame, /*full=*/true, max_chars) : QString();
}

bool LoadedSnapshot::userFrameLess(analysis::StackId a, analysis::StackId b) const {
  const auto x = frames->user_frame(a), y = frames->user_frame(b);
  if (!x || !y) return !x && y;
  const analysis::Frame& fx = snapshot->frames.get(*x);
  const analysis::Frame& fy = snapshot->frames.get(*y);
  const auto key = [this](const analysis::Frame& f) { return std::tuple(snapshot->str(f.name), snapshot->str(f.filename), f.line); };
  return key(fx) < key(fy);
}

QString LoadedSnapshot::frameLabel(analysis::FrameId id, bool full, qsizetype max_chars) const {
  const analysis::Frame& f = snapshot->frames.get(id);
  const std::string_view name = snapshot->str(f.name), file = snapshot->str(f.filename);
  QString text = full ? capped(name, max_chars) : cappedShortName(name, max_chars);
  if (!full && (file.empty() || file == "??") && f.line == 0) return text;  // a C++ frame without a location
  return text + " (" + capped(file, max_chars) + ":" + QString::number(f.line) + ")";
}

bool LoadedSnapshot::dispatcherFrame(analysis::FrameId id) const {
  if (frames->hidden(id) || frames->user(id)) return false;
  const analysis::Frame& f = snapshot->frames.get(id);
  const std::string_view file = snapshot->str(f.filename);
  // C++ frames: no Python source file (PyTorch writes "??" or a .cpp/.h/.so path).
  return !file.ends_with(".py") && analysis::looks_like_cpp_signature(snapshot->str(f.name));
}

QString LoadedSnapshot::stackText(analysis::StackId stack, int max_lines) const {
  const auto visible = frames->visible(stack);
  struct Line {
    QString text;
    bool user;
  };
  std::vector<Line> lines;
  for (size_t i = 0; i < visible.size();) {
    size_t j = i;
    while (j < visible.size() && dispatcherFrame(visible[j])) ++j;
    if (j - i >= 2) {
      lines.push_back({QStringLiteral("... %1 C++ frames: %2 ... %3")
                           .arg(j - i)
                           .arg(frameLabel(visible[i]), frameLabel(visible[j - 1])),
                       false});
      i = j;
      continue;
    }
    lines.push_back({frameLabel(visible[i]), frames->user(visible[i])});
    ++i;
  }
  // Too many lines: drop library lines from the outermost end first, never a user frame
  // while a library line is left to drop.
  size_t cut = 0;
  const size_t limit = size_t(std::max(1, max_lines));
  for (size_t k = lines.size(); lines.size() - cut > limit && k-- > 0;)
    if (!lines[k].user) lines[k].text.clear(), ++cut;
  QString text;
  size_t shown = 0;
  for (const Line& l : lines) {
    if (l.text.isEmpty()) continue;
    if (shown == limit) {
      ++cut;
      continue;
    }
    text += l.text + '\n';
    ++shown;
  }
  if (cut) text += QStringLiteral("... %1 more frames (click to pin the whole stack)\n").arg(cut);
  if (const size_t hidden = frames->hidden_count(stack))
    text += QStringLiteral("(%1 frames of the allocator and unwinder hidden)\n").arg(hidden);
  return text.trimmed();
}

QString LoadedSnapshot::fullStackText(analysis::StackId stack) const {
  QString text;
  for (analysis::FrameId f : snapshot->stack(stack)) text += frameLabel(f, true, kWhole) + '\n';
  return text;
}

uint32_t LoadedSnapshot::intervalAt(uint64_t address, uint32_t entry) const {
  if (entry != UINT32_MAX) return entry < interval_of_entry.size() ? interval_of_entry[entry] : UINT32_MAX;
  const auto intervals = allocations->intervals();
  for (uint32_t i = 0; i < intervals.size(); ++i)
    if (intervals[i].end_entry == UINT32_MAX && address >= intervals[i].address &&
        address < intervals[i].address + std::max<uint64_t>(intervals[i].size, 1))
      return i;
  return UINT32_MAX;
}

}  // namespace cudascope::gui
