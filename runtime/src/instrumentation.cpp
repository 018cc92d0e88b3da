#include <cudascope/cuda/instrumentation.h>

#include <time.h>

namespace cudascope::cuda::instrumentation {

std::uint64_t host_time_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(now.tv_nsec);
}

}  // namespace cudascope::cuda::instrumentation
