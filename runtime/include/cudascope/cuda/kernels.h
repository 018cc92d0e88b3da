#pragma once
// The runtime's own kernels that are part of the API.

#include <chrono>

namespace cudascope::cuda {

class Stream;

// Occupies `stream` with a one-thread kernel that spins for `duration` (torch.cuda._sleep,
// in time rather than cycles): a kernel of known length for tests, demos and benchmarks.
void busy_wait(std::chrono::nanoseconds duration, const Stream& stream);
// On the current stream.
void busy_wait(std::chrono::nanoseconds duration);

}  // namespace cudascope::cuda
