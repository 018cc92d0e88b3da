#pragma once
// What the Chrome trace writer's source files share.

#include "json_text.h"

#include <cudascope/profiler/record.h>

#include <cstddef>
#include <cstdint>

namespace cudascope::exporters::detail {

// Record::thread_id of activity that happened on a device, not a host thread.
constexpr std::uint32_t kDeviceSide = ~0u;
// External ids (correlation -> framework op) are forgotten beyond this many.
constexpr std::size_t kMaxExternalIds = 1u << 20;

}  // namespace cudascope::exporters::detail
