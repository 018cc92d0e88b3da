#include "recording_mode.h"

#include <cudascope/util/env_value.h>

#include <stdexcept>
#include <string>

namespace cudascope::inject {

bool trace_wanted() { return !util::env_flag("CUDASCOPE_NO_TRACE").value_or(false); }

profiler::ActivitySet activities_from_environment() {
  const bool metrics_only = !util::env_text("CUDASCOPE_METRICS").value_or("").empty() && !trace_wanted() &&
                            !util::env_flag("CUDASCOPE_METRICS_LABEL_NVTX").value_or(false);
  const auto defaults =
      metrics_only ? profiler::ActivitySet::metrics_only_defaults() : profiler::ActivitySet::defaults();
  const auto list = util::env_text("CUDASCOPE_ACTIVITIES");
  if (!list) return defaults;
  try {
    return profiler::ActivitySet::parse(*list, defaults);
  } catch (const std::invalid_argument& e) {
    throw util::EnvError(util::env_shown("CUDASCOPE_ACTIVITIES", *list) + ": " + e.what());
  }
}

}  // namespace cudascope::inject
