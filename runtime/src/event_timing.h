#pragma once
// Places Event::elapsed_time spans on the host clock for the profiler (see
// instrumentation::EventTiming): a reference event per device, recorded on an idle stream of
// its own when timing begins, from which the end event's offset is read.

#include <cudascope/cuda/event.h>

namespace cudascope::cuda::detail {

// Before a timed event is recorded on `device` while an observer is installed: makes sure
// the device's reference event exists and precedes it. Thread-safe.
void prepare_event_timing(int device);

// After elapsed_time computed `ms` between `start` and `end`: reports the span to the
// installed observer, if any. Thread-safe; never throws (a span it cannot place is dropped).
void report_event_timing(const Event& start, const Event& end, float ms) noexcept;

}  // namespace cudascope::cuda::detail
