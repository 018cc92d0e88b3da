#pragma once
// Running a TensorKernel where a tensor lives: on the current stream of its CUDA device
// (asynchronous), or on the calling thread for CPU tensors.

#include "../backend/tensor_kernel.h"

#include <cudascope/cuda/tensor.h>

namespace cudascope::detail {

// Fills in nothing: the caller sets every field but runs it on `device` (CPU: host, now).
void run_kernel(const Device& device, const cuda::detail::TensorKernel& kernel);
// The kernel's layout for a tensor's view (throws when it has more than kMaxKernelDims dims).
cuda::detail::KernelLayout layout_of(const Tensor& tensor);

}  // namespace cudascope::detail
