// The tensor kernels on the host, for the sim backend. The RNG kernels walk the same threads,
// grid-stride iterations and Philox counters as the device's, so the numbers equal a GPU's.
#include "tensor_kernel.h"

#include "../random/philox.h"
#include "../tensor/scalar_convert.h"

#include <algorithm>
#include <cstring>

namespace cudascope::cuda::detail {
namespace {

using cudascope::detail::bfloat16_to_float;
using cudascope::detail::float_to_bfloat16;
using cudascope::detail::float_to_half;
using cudascope::detail::half_to_float;

double load(DType dtype, const void* base, std::int64_t i) {
  switch (dtype) {
    case DType::kFloat32: return static_cast<const float*>(base)[i];
    case DType::kFloat16: return half_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::kBFloat16: return bfloat16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::kInt64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
    case DType::kInt32: return static_cast<const std::int32_t*>(base)[i];
    case DType::kUInt8: return static_cast<const std::uint8_t*>(base)[i];
    case DType::kBool: return static_cast<const bool*>(base)[i] ? 1.0 : 0.0;
  }
  return 0;
}

void store(DType dtype, void* base, std::int64_t i, double v) {
  switch (dtype) {
    case DType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DType::kFloat16: static_cast<std::uint16_t*>(base)[i] = float_to_half(static_cast<float>(v)); return;
    case DType::kBFloat16: static_cast<std::uint16_t*>(base)[i] = float_to_bfloat16(static_cast<float>(v)); return;
    case DType::kInt64: static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(v); return;
    case DType::kInt32: static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(v); return;
    case DType::kUInt8: static_cast<std::uint8_t*>(base)[i] = static_cast<std::uint8_t>(static_cast<std::int64_t>(v)); return;
    case DType::kBool: static_cast<bool*>(base)[i] = v != 0; return;
  }
}

bool integral(DType dtype) { return !is_floating_point(dtype); }

void fill(const TensorKernel& k) {
  if (k.dtype == DType::kInt64) {
    auto* out = static_cast<std::int64_t*>(k.out);
    for (std::int64_t i = 0; i < k.numel; ++i) out[i] = k.int_value;
    return;
  }
  const double v = integral(k.dtype) && k.dtype != DType::kBool ? static_cast<double>(k.int_value) : k.value;
  for (std::int64_t i = 0; i < k.numel; ++i) store(k.dtype, k.out, i, v);
}

void arange(const TensorKernel& k) {
  for (std::int64_t i = 0; i < k.numel; ++i) store(k.dtype, k.out, i, k.value + static_cast<double>(i) * k.step);
}

std::int64_t offset_of(const KernelLayout& layout, std::int64_t linear) {
  std::int64_t offset = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    const std::int64_t size = layout.sizes[d];
    offset += (linear % size) * layout.strides[d];
    linear /= size;
  }
  return offset;
}

void copy(const TensorKernel& k) {
  const std::size_t bytes = element_size(k.dtype);
  auto* out = static_cast<char*>(k.out);
  const auto* in = static_cast<const char*>(k.a);
  for (std::int64_t i = 0; i < k.numel; ++i) {
    std::memcpy(out + offset_of(k.out_layout, i) * static_cast<std::int64_t>(bytes),
                in + offset_of(k.a_layout, i) * static_cast<std::int64_t>(bytes), bytes);
  }
}

void add(const TensorKernel& k) {
  if (k.dtype == DType::kInt64) {
    const auto alpha = static_cast<std::int64_t>(k.value);
    const auto* a = static_cast<const std::int64_t*>(k.a);
    const auto* b = static_cast<const std::int64_t*>(k.b);
    auto* out = static_cast<std::int64_t*>(k.out);
    for (std::int64_t i = 0; i < k.numel; ++i) out[i] = a[i] + alpha * b[i];
    return;
  }
  if (k.dtype == DType::kBool) {
    for (std::int64_t i = 0; i < k.numel; ++i) store(k.dtype, k.out, i, load(k.dtype, k.a, i) + load(k.dtype, k.b, i));
    return;
  }
  // Floating types compute in float, as the device (opmath float for half and bfloat16).
  if (is_floating_point(k.dtype)) {
    const auto alpha = static_cast<float>(k.value);
    for (std::int64_t i = 0; i < k.numel; ++i) {
      const auto a = static_cast<float>(load(k.dtype, k.a, i));
      const auto b = static_cast<float>(load(k.dtype, k.b, i));
      store(k.dtype, k.out, i, static_cast<double>(a + alpha * b));
    }
    return;
  }
  const auto alpha = static_cast<std::int64_t>(k.value);
  for (std::int64_t i = 0; i < k.numel; ++i) {
    const auto a = static_cast<std::int64_t>(load(k.dtype, k.a, i));
    const auto b = static_cast<std::int64_t>(load(k.dtype, k.b, i));
    store(k.dtype, k.out, i, static_cast<double>(a + alpha * b));
  }
}

void sum(const TensorKernel& k) {
  if (is_floating_point(k.dtype)) {
    float total = 0;
    for (std::int64_t i = 0; i < k.numel; ++i) total += static_cast<float>(load(k.dtype, k.a, i));
    store(k.dtype, k.out, 0, static_cast<double>(total));
    return;
  }
  std::int64_t total = 0;
  if (k.dtype == DType::kInt64) {
    const auto* a = static_cast<const std::int64_t*>(k.a);
    for (std::int64_t i = 0; i < k.numel; ++i) total += a[i];
  } else {
    for (std::int64_t i = 0; i < k.numel; ++i) total += static_cast<std::int64_t>(load(k.dtype, k.a, i));
  }
  *static_cast<std::int64_t*>(k.out) = total;
}

// torch's distribution_elementwise_grid_stride_kernel with unroll factor 4: thread t's j-th
// curand4 call yields elements t + (4j + i) * threads for i in 0..3.
template <typename Transform>
void grid_stride_rng(const TensorKernel& k, Transform&& transform) {
  const std::int64_t threads = static_cast<std::int64_t>(k.grid) * kRngBlock;
  const std::int64_t per_call = threads * 4;
  const std::int64_t calls = (k.numel - 1) / per_call + 1;
  for (std::int64_t t = 0; t < threads && t < k.numel; ++t) {
    philox::Stream4 stream(k.seed, static_cast<std::uint64_t>(t), k.offset);
    for (std::int64_t j = 0; j < calls; ++j) {
      const philox::Counter r = stream.next();
      float v[4];
      transform(r, v);
      for (int i = 0; i < 4; ++i) {
        const std::int64_t index = t + j * per_call + i * threads;
        if (index < k.numel) store(k.dtype, k.out, index, static_cast<double>(v[i]));
      }
    }
  }
}

void uniform(const TensorKernel& k) {
  // torch's uniform_ transform for [0, 1): value == 1 becomes 0 (the bounds of (0, 1] reversed),
  // compared after the cast to the output dtype.
  grid_stride_rng(k, [&](const philox::Counter& r, float* v) {
    for (int i = 0; i < 4; ++i) {
      const float u = philox::uniform(r[static_cast<std::size_t>(i)]);
      double cast = u;
      if (k.dtype == DType::kFloat16) cast = half_to_float(float_to_half(u));
      if (k.dtype == DType::kBFloat16) cast = bfloat16_to_float(float_to_bfloat16(u));
      v[i] = cast == 1.0 ? 0.0f : u;
    }
  });
}

void normal(const TensorKernel& k) {
  grid_stride_rng(k, [](const philox::Counter& r, float* v) {
    const auto first = philox::box_muller(r[0], r[1]);
    const auto second = philox::box_muller(r[2], r[3]);
    v[0] = first[0];
    v[1] = first[1];
    v[2] = second[0];
    v[3] = second[1];
  });
}

// cuBLAS's sgemm stand-in: float32 products summed in float, row by row.
void matmul(const TensorKernel& k) {
  const std::int64_t m = k.mnk[0], n = k.mnk[1], inner = k.mnk[2];
  const auto* a = static_cast<const float*>(k.a);
  const auto* b = static_cast<const float*>(k.b);
  auto* out = static_cast<float*>(k.out);
  for (std::int64_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    std::fill(row, row + n, 0.0f);
    for (std::int64_t p = 0; p < inner; ++p) {
      const float scale = a[i * inner + p];
      const float* b_row = b + p * n;
      for (std::int64_t j = 0; j < n; ++j) row[j] += scale * b_row[j];
    }
  }
}

}  // namespace

DType sum_dtype(DType dtype) noexcept { return is_floating_point(dtype) ? dtype : DType::kInt64; }

const char* tensor_kernel_name(const TensorKernel& kernel) noexcept {
  switch (kernel.op) {
    case TensorKernel::Op::kFill: return "cudascope::tensor::fill_kernel";
    case TensorKernel::Op::kArange: return "cudascope::tensor::arange_kernel";
    case TensorKernel::Op::kCopy: return "cudascope::tensor::strided_copy_kernel";
    case TensorKernel::Op::kAdd: return "cudascope::tensor::add_kernel";
    case TensorKernel::Op::kSum: return "cudascope::tensor::sum_kernel";
    case TensorKernel::Op::kUniform: return "cudascope::tensor::uniform_kernel";
    case TensorKernel::Op::kNormal: return "cudascope::tensor::normal_kernel";
    case TensorKernel::Op::kMatmul: return "cudascope::blas::sgemm_kernel";
  }
  return "cudascope::tensor::kernel";
}

void run_tensor_kernel_on_host(const TensorKernel& kernel) {
  if (kernel.numel == 0) return;
  switch (kernel.op) {
    case TensorKernel::Op::kFill: return fill(kernel);
    case TensorKernel::Op::kArange: return arange(kernel);
    case TensorKernel::Op::kCopy: return copy(kernel);
    case TensorKernel::Op::kAdd: return add(kernel);
    case TensorKernel::Op::kSum: return sum(kernel);
    case TensorKernel::Op::kUniform: return uniform(kernel);
    case TensorKernel::Op::kNormal: return normal(kernel);
    case TensorKernel::Op::kMatmul: return matmul(kernel);
  }
}

}  // namespace cudascope::cuda::detail
