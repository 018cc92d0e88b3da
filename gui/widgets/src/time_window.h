#pragma once
// The zoom arithmetic the timeline widgets share: a time window scaled about a point in it.

#include <cmath>
#include <cstdint>
#include <utility>

namespace cudascope::gui::detail {

// [t0, t1) zoomed in by `factor` (> 1 narrows) about the point at `anchor` (0 = left edge,
// 1 = right edge), which stays where it is on screen.
inline std::pair<std::int64_t, std::int64_t> zoomed_window(std::int64_t t0, std::int64_t t1, double factor,
                                                           double anchor) {
  const double span = double(t1 - t0);
  const double at = double(t0) + anchor * span;
  const double next = span / factor;
  return {std::llround(at - anchor * next), std::llround(at + (1.0 - anchor) * next)};
}

}  // namespace cudascope::gui::detail
