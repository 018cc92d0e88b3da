#pragma once
// The runtime's own device code (cuda_kernels.cu).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cudascope::cuda::detail {
// A one-thread kernel that spins on the global timer for `nanoseconds`: a kernel of known
// length for tests, demos and benchmarks.
cudaError_t launch_spin_kernel(cudaStream_t stream, std::uint64_t nanoseconds);
}  // namespace cudascope::cuda::detail
