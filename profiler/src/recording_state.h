#pragma once
// Process-wide switches the hot paths read: one relaxed load each.

#include <atomic>

namespace cudascope::profiler::detail {

inline std::atomic<bool> nvtx_recording_flag{false};
inline bool nvtx_recording() noexcept { return nvtx_recording_flag.load(std::memory_order_relaxed); }

}  // namespace cudascope::profiler::detail
