#include "cuda_kernels.h"

namespace cudascope::cuda::detail {
namespace {
__device__ __forceinline__ unsigned long long global_timer_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void cudascope_spin_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) {
  }
}
}  // namespace

cudaError_t launch_spin_kernel(cudaStream_t stream, std::uint64_t nanoseconds) {
  cudascope_spin_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}
}  // namespace cudascope::cuda::detail
