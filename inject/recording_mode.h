#pragma once
// What a recorded process was asked to record, from its environment (injection_agent.h lists
// the variables): whether it writes a trace, and which activities it records.

#include <cudascope/profiler/activities.h>

namespace cudascope::inject {

// Whether this process writes a trace file (false with CUDASCOPE_NO_TRACE=1). Throws
// util::EnvError for a value that is not a flag (1/0, true/false, yes/no, on/off).
bool trace_wanted();

// CUDASCOPE_ACTIVITIES, whose "default" (and an unset variable) stands for the defaults of
// the recording's mode: ActivitySet::metrics_only_defaults() for live metrics without a trace
// (and without CUDASCOPE_METRICS_LABEL_NVTX, whose labels need the launch calls), else
// ActivitySet::defaults(). So a metrics-only process started without `cudascope run` records,
// and costs, what one under it does, and "default,sync" adds synchronisations alone. Throws
// util::EnvError naming the variable at fault.
profiler::ActivitySet activities_from_environment();

}  // namespace cudascope::inject
