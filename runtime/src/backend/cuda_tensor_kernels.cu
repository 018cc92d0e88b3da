// The tensor kernels on the device (tensor_kernel.h). The RNG kernels are torch's launch:
// distribution_elementwise_grid_stride_kernel with 256-thread blocks, the grid the caller
// computed as torch's calc_execution_policy does, curand_init(seed, thread, offset) and one
// curand_uniform4 / curand_normal4 per grid-stride step, four elements apart by the thread
// count. That layout, not only the generator, decides which number lands where.
#include "cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <curand_kernel.h>

namespace cudascope::cuda::detail {
namespace {

// __host__ too: the launchers convert fill values on the host. (A __device__-only function
// called from a host template compiles silently and ends the process at run time.)
template <typename T>
struct Convert {
  __host__ __device__ static float to_float(T v) { return static_cast<float>(v); }
  __host__ __device__ static T from_float(float v) { return static_cast<T>(v); }
};
template <>
struct Convert<__half> {
  __host__ __device__ static float to_float(__half v) { return __half2float(v); }
  __host__ __device__ static __half from_float(float v) { return __float2half_rn(v); }
};
template <>
struct Convert<__nv_bfloat16> {
  __host__ __device__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  __host__ __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

#define CUDASCOPE_GRID_STRIDE(i, n) \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

template <typename T>
__global__ void fill_kernel(T* out, std::int64_t n, T value) {
  CUDASCOPE_GRID_STRIDE(i, n) out[i] = value;
}

template <typename T>
__global__ void arange_kernel(T* out, std::int64_t n, double start, double step) {
  CUDASCOPE_GRID_STRIDE(i, n) out[i] = Convert<T>::from_float(static_cast<float>(start + static_cast<double>(i) * step));
}
// Integers are computed in double, then truncated, as the host does.
template <typename T>
__global__ void arange_integer_kernel(T* out, std::int64_t n, double start, double step) {
  CUDASCOPE_GRID_STRIDE(i, n) out[i] = static_cast<T>(static_cast<std::int64_t>(start + static_cast<double>(i) * step));
}

__device__ std::int64_t offset_of(const KernelLayout& layout, std::int64_t linear) {
  std::int64_t offset = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const std::int64_t size = layout.sizes[d];
    offset += (linear % size) * layout.strides[d];
    linear /= size;
  }
  return offset;
}

template <typename T>
__global__ void strided_copy_kernel(T* out, const T* in, std::int64_t n, KernelLayout out_layout, KernelLayout in_layout) {
  CUDASCOPE_GRID_STRIDE(i, n) out[offset_of(out_layout, i)] = in[offset_of(in_layout, i)];
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, std::int64_t n, float alpha) {
  CUDASCOPE_GRID_STRIDE(i, n) {
    out[i] = Convert<T>::from_float(Convert<T>::to_float(a[i]) + alpha * Convert<T>::to_float(b[i]));
  }
}
template <typename T>
__global__ void add_integer_kernel(T* out, const T* a, const T* b, std::int64_t n, std::int64_t alpha) {
  CUDASCOPE_GRID_STRIDE(i, n) out[i] = static_cast<T>(a[i] + alpha * b[i]);
}
__global__ void add_bool_kernel(bool* out, const bool* a, const bool* b, std::int64_t n) {
  CUDASCOPE_GRID_STRIDE(i, n) out[i] = a[i] || b[i];
}

// One block sums everything: deterministic (same order every run), and enough for a minimal
// tensor's reductions.
template <typename T, typename Acc, typename Out>
__global__ void sum_kernel(Out* out, const T* in, std::int64_t n) {
  __shared__ Acc partial[kThreads];
  Acc total = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads) total += static_cast<Acc>(Convert<T>::to_float(in[i]));
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = Convert<Out>::from_float(static_cast<float>(partial[0]));
}
template <typename T>
__global__ void sum_integer_kernel(std::int64_t* out, const T* in, std::int64_t n) {
  __shared__ std::int64_t partial[kThreads];
  std::int64_t total = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads) total += static_cast<std::int64_t>(in[i]);
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

// torch's uniform_ transform: rand * 1 + 0 cast to the output type, and 1 (cuRAND's range is
// (0, 1]) becomes 0.
template <typename T>
struct UniformTransform {
  __device__ T operator()(float rand) const {
    const T value = Convert<T>::from_float(rand);
    return Convert<T>::to_float(value) == 1.0f ? Convert<T>::from_float(0.0f) : value;
  }
};
template <typename T>
struct NormalTransform {
  __device__ T operator()(float rand) const { return Convert<T>::from_float(rand); }
};
struct Uniform4 {
  __device__ float4 operator()(curandStatePhilox4_32_10_t* state) const { return curand_uniform4(state); }
};
struct Normal4 {
  __device__ float4 operator()(curandStatePhilox4_32_10_t* state) const { return curand_normal4(state); }
};

template <typename T, typename Dist, typename Transform>
__global__ void __launch_bounds__(256, 4)
    rng_grid_stride_kernel(T* out, std::int64_t n, unsigned long long seed, unsigned long long offset) {
  const std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  curandStatePhilox4_32_10_t state;
  curand_init(seed, idx, offset, &state);
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  const std::int64_t rounded = ((n - 1) / (stride * 4) + 1) * stride * 4;
  for (std::int64_t linear = idx; linear < rounded; linear += stride * 4) {
    const float4 rand = Dist{}(&state);
    const float values[4] = {rand.x, rand.y, rand.z, rand.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const std::int64_t li = linear + stride * i;
      if (li < n) out[li] = Transform{}(values[i]);
    }
    __syncthreads();
  }
}

template <typename T>
void launch_float(cudaStream_t stream, const TensorKernel& k) {
  T* out = static_cast<T*>(k.out);
  const unsigned blocks = blocks_for(k.numel);
  switch (k.op) {
    case TensorKernel::Op::kFill:
      fill_kernel<T><<<blocks, kThreads, 0, stream>>>(out, k.numel, Convert<T>::from_float(static_cast<float>(k.value)));
      return;
    case TensorKernel::Op::kArange:
      arange_kernel<T><<<blocks, kThreads, 0, stream>>>(out, k.numel, k.value, k.step);
      return;
    case TensorKernel::Op::kAdd:
      add_kernel<T><<<blocks, kThreads, 0, stream>>>(out, static_cast<const T*>(k.a), static_cast<const T*>(k.b), k.numel,
                                                     static_cast<float>(k.value));
      return;
    case TensorKernel::Op::kSum:
      sum_kernel<T, float, T><<<1, kThreads, 0, stream>>>(out, static_cast<const T*>(k.a), k.numel);
      return;
    case TensorKernel::Op::kUniform:
      rng_grid_stride_kernel<T, Uniform4, UniformTransform<T>><<<k.grid, kRngBlock, 0, stream>>>(out, k.numel, k.seed, k.offset);
      return;
    case TensorKernel::Op::kNormal:
      rng_grid_stride_kernel<T, Normal4, NormalTransform<T>><<<k.grid, kRngBlock, 0, stream>>>(out, k.numel, k.seed, k.offset);
      return;
    case TensorKernel::Op::kCopy: return;
    case TensorKernel::Op::kMatmul: return;  // refused by launch_tensor_kernel_cuda
  }
}

template <typename T>
void launch_integer(cudaStream_t stream, const TensorKernel& k) {
  T* out = static_cast<T*>(k.out);
  const unsigned blocks = blocks_for(k.numel);
  switch (k.op) {
    case TensorKernel::Op::kFill:
      fill_kernel<T><<<blocks, kThreads, 0, stream>>>(out, k.numel, static_cast<T>(k.int_value));
      return;
    case TensorKernel::Op::kArange:
      arange_integer_kernel<T><<<blocks, kThreads, 0, stream>>>(out, k.numel, k.value, k.step);
      return;
    case TensorKernel::Op::kAdd:
      add_integer_kernel<T><<<blocks, kThreads, 0, stream>>>(out, static_cast<const T*>(k.a), static_cast<const T*>(k.b),
                                                             k.numel, static_cast<std::int64_t>(k.value));
      return;
    case TensorKernel::Op::kSum:
      sum_integer_kernel<T><<<1, kThreads, 0, stream>>>(static_cast<std::int64_t*>(k.out), static_cast<const T*>(k.a), k.numel);
      return;
    default: return;
  }
}

template <typename T>
void launch_copy(cudaStream_t stream, const TensorKernel& k) {
  strided_copy_kernel<T><<<blocks_for(k.numel), kThreads, 0, stream>>>(static_cast<T*>(k.out), static_cast<const T*>(k.a),
                                                                       k.numel, k.out_layout, k.a_layout);
}

}  // namespace

cudaError_t launch_tensor_kernel_cuda(cudaStream_t stream, const TensorKernel& k) {
  if (k.numel == 0) return cudaSuccess;
  if (k.op == TensorKernel::Op::kMatmul) return cudaErrorNotSupported;  // cuBLAS multiplies on cuda (blas.h)
  if (k.op == TensorKernel::Op::kCopy) {
    switch (element_size(k.dtype)) {
      case 1: launch_copy<std::uint8_t>(stream, k); break;
      case 2: launch_copy<std::uint16_t>(stream, k); break;
      case 4: launch_copy<std::uint32_t>(stream, k); break;
      default: launch_copy<std::uint64_t>(stream, k); break;
    }
    return cudaGetLastError();
  }
  switch (k.dtype) {
    case DType::kFloat32: launch_float<float>(stream, k); break;
    case DType::kFloat16: launch_float<__half>(stream, k); break;
    case DType::kBFloat16: launch_float<__nv_bfloat16>(stream, k); break;
    case DType::kInt64: launch_integer<std::int64_t>(stream, k); break;
    case DType::kInt32: launch_integer<std::int32_t>(stream, k); break;
    case DType::kUInt8: launch_integer<std::uint8_t>(stream, k); break;
    case DType::kBool:
      if (k.op == TensorKernel::Op::kAdd) {
        add_bool_kernel<<<blocks_for(k.numel), kThreads, 0, stream>>>(static_cast<bool*>(k.out),
                                                                      static_cast<const bool*>(k.a),
                                                                      static_cast<const bool*>(k.b), k.numel);
      } else if (k.op == TensorKernel::Op::kFill) {
        fill_kernel<bool><<<blocks_for(k.numel), kThreads, 0, stream>>>(static_cast<bool*>(k.out), k.numel, k.value != 0);
      } else {
        launch_integer<bool>(stream, k);
      }
      break;
  }
  return cudaGetLastError();
}

}  // namespace cudascope::cuda::detail
