#pragma once
// Tools the runtime starts on request from the environment, loaded from beside the runtime
// library so a program needs no code change: CUDASCOPE_METRICS=address:port serves this
// process's allocator statistics and device health for Prometheus.

#include <string>

namespace cudascope::cuda::detail {

// The path of `library` in the runtime library's directory or ../lib; empty if absent.
std::string library_beside_runtime(const std::string& library);

// Called once when the runtime initialises.
void start_tools_from_environment();

}  // namespace cudascope::cuda::detail
