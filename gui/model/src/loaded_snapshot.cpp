#include <cudascope/gui/loaded_snapshot.h>

namespace cudascope::gui {

std::shared_ptr<const LoadedSnapshot> index_snapshot(snapshot::Snapshot&& snap, int device) {
  auto out = std::make_shared<LoadedSnapshot>();
  auto shared = std::make_shared<snapshot::Snapshot>(std::move(snap));
  if (device < 0) {
    device = shared->devices.empty() ? (shared->segments.empty() ? 0 : shared->segments.front().device)
                                     : shared->devices.front().device;
  }
  out->device = device;
  out->figures = snapshot::compute_figures(*shared);
  out->allocations = std::make_shared<snapshot::StackedTimeline>(
      snapshot::StackedTimeline::build(*shared, device, snapshot::StackedTimeline::Kind::allocations));
  out->segments = std::make_shared<snapshot::StackedTimeline>(
      snapshot::StackedTimeline::build(*shared, device, snapshot::StackedTimeline::Kind::segments));
  out->snapshot = std::move(shared);
  return out;
}

}  // namespace cudascope::gui
