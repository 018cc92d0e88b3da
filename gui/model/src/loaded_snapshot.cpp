#include <cudascope/gui/loaded_snapshot.h>

#include <algorithm>

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
  out->snapshot = std::move(shared);
  return out;
}

QString LoadedSnapshot::userFrameText(analysis::StackId stack) const {
  const auto frame = frames->user_frame(stack);
  return frame ? QString::fromStdString(snapshot->frame_text(*frame)) : QString();
}

QString LoadedSnapshot::stackText(analysis::StackId stack, int max_frames) const {
  const auto visible = frames->visible(stack);
  QString text;
  const size_t shown = std::min(visible.size(), static_cast<size_t>(std::max(0, max_frames)));
  for (size_t i = 0; i < shown; ++i) text += QString::fromStdString(snapshot->frame_text(visible[i])) + '\n';
  if (visible.size() > shown) text += QStringLiteral("... %1 more frames\n").arg(visible.size() - shown);
  if (const size_t hidden = frames->hidden_count(stack))
    text += QStringLiteral("(%1 frames of the allocator and unwinder hidden)\n").arg(hidden);
  return text.trimmed();
}

}  // namespace cudascope::gui
