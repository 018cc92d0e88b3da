#include <cudascope/gui/loaded_snapshot.h>

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
  out->snapshot = std::move(shared);
  return out;
}

}  // namespace cudascope::gui
