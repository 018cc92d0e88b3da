#pragma once
// The tensor kernels both backends run, described as plain data: the cuda backend launches
// them from cuda_tensor_kernels.cu, the sim backend runs run_tensor_kernel_on_host on the
// stream's worker thread. Same operations, same results (RNG bit for bit for uniform numbers).

#include <cudascope/cuda/tensor.h>

#include <cstdint>

namespace cudascope::cuda::detail {

inline constexpr int kMaxKernelDims = 8;

// A strided view in elements, for copies between layouts.
struct KernelLayout {
  int ndim = 0;
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kMaxKernelDims] = {};
};

struct TensorKernel {
  enum class Op : std::uint8_t {
    kFill,     // out[i] = value (integers: int_value)
    kArange,   // out[i] = value + i * step
    kCopy,     // out (out_layout) = a (a_layout), element_size bytes each
    kAdd,      // out[i] = a[i] + alpha * b[i]  (alpha in value)
    kSum,      // out[0] = sum of a[0..numel)   (out dtype: sum_dtype(dtype))
    kUniform,  // torch.rand's kernel: Philox (seed, offset), grid x 256 threads, 4 per call
    kNormal,   // torch.randn's kernel, same launch
    kMatmul,   // out (m x n) = a (m x k) @ b (k x n), float32 row-major (mnk); sim only: the
               // cuda backend multiplies through cuBLAS (blas.h)
  };
  Op op = Op::kFill;
  DType dtype = DType::kFloat32;
  std::int64_t numel = 0;
  void* out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  double value = 0;
  double step = 0;
  std::int64_t int_value = 0;
  KernelLayout out_layout, a_layout;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
  std::uint32_t grid = 0;  // RNG kernels: blocks of kRngBlock threads
  std::int64_t mnk[3] = {};  // kMatmul's m, n, k
};

inline constexpr std::uint32_t kRngBlock = 256;

// The kernel's name in traces (as CUPTI would report the cuda backend's kernel).
const char* tensor_kernel_name(const TensorKernel& kernel) noexcept;
// The dtype kSum writes.
DType sum_dtype(DType dtype) noexcept;
// Runs `kernel` on the calling thread over host-addressable memory (the sim backend).
void run_tensor_kernel_on_host(const TensorKernel& kernel);

}  // namespace cudascope::cuda::detail
