#pragma once
// The runtime's own device code (cuda_kernels.cu).

#include "tensor_kernel.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace cudascope::cuda::detail {
// A one-thread kernel that spins on the global timer for `nanoseconds`: a kernel of known
// length for tests, demos and benchmarks.
cudaError_t launch_spin_kernel(cudaStream_t stream, std::uint64_t nanoseconds);
// A tensor kernel (tensor_kernel.h) on `stream` of the current device (cuda_tensor_kernels.cu).
cudaError_t launch_tensor_kernel_cuda(cudaStream_t stream, const TensorKernel& kernel);
}  // namespace cudascope::cuda::detail
