#pragma once
// Ruler ticks for the timelines: a 1-2-5 step near a wanted spacing, and labels whose
// precision follows the step, so neighbouring labels always differ ("47.9160 ms, 47.9165 ms"
// at microsecond zoom, never "47.916 ms" three times).

#include <QString>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cudascope::gui::detail {

// A "nice" step (1, 2 or 5 times a power of ten) at least `target`.
inline double nice_step(double target) {
  const double p = std::pow(10.0, std::floor(std::log10(std::max(target, 1e-12))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= target * (1 - 1e-9)) return m * p;
  return 10 * p;
}

// Digits after the point needed to tell multiples of `step` apart in `unit`.
inline int decimals_for(double step, double unit) {
  const double s = step / unit;
  return s >= 1 ? 0 : std::min(9, int(std::ceil(-std::log10(s) - 1e-9)));
}

// `ns` as a ruler label whose unit and decimals suit `step_ns` (both nanoseconds).
inline QString tick_label_ns(double ns, double step_ns) {
  const double a = std::max(std::fabs(ns), step_ns);
  const double unit = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1;
  const char* name = unit == 1e9 ? " s" : unit == 1e6 ? " ms" : unit == 1e3 ? " us" : " ns";
  return QString::number(ns / unit, 'f', decimals_for(step_ns, unit)) + name;
}

}  // namespace cudascope::gui::detail
