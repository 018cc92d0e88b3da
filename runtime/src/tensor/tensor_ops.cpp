// fill_, add, sum and cat: each one kernel on the tensor's device (its current stream), or on
// the calling thread for CPU tensors.
#include "sanitizer_access.h"
#include "storage.h"
#include "tensor_kernels.h"

#include "../check.h"
#include "../runtime_state.h"

#include <cmath>

namespace cudascope {

namespace cerr = cuda::error_code;
using cuda::detail::TensorKernel;

namespace detail {

void run_kernel(const Device& device, const TensorKernel& kernel) {
  if (kernel.numel == 0) return;
  if (device.is_cpu()) return cuda::detail::run_tensor_kernel_on_host(kernel);
  const auto stream = cuda::detail::current_stream_of(device.index);
  cuda::detail::lazy_backend().launch_tensor_kernel(device.index, stream.handle, kernel);
}

cuda::detail::KernelLayout layout_of(const Tensor& tensor) {
  CUDASCOPE_CHECK(tensor.dim() <= cuda::detail::kMaxKernelDims, cerr::kInvalidValue, "cudascope::Tensor",
                  "strided tensors of more than " + std::to_string(cuda::detail::kMaxKernelDims) +
                      " dimensions are not supported");
  cuda::detail::KernelLayout layout;
  layout.ndim = static_cast<int>(tensor.dim());
  for (int d = 0; d < layout.ndim; ++d) {
    layout.sizes[d] = tensor.sizes()[static_cast<std::size_t>(d)];
    layout.strides[d] = tensor.strides()[static_cast<std::size_t>(d)];
  }
  return layout;
}

}  // namespace detail

Tensor& Tensor::fill_(double value) {
  if (numel() == 0) return *this;
  if (!is_contiguous()) {
    Tensor filled = full(sizes_, value, TensorOptions{}.with_dtype(dtype_).with_device(device()));
    return copy_(filled);
  }
  TensorKernel k;
  k.op = TensorKernel::Op::kFill;
  k.dtype = dtype_;
  k.numel = numel();
  k.out = data_ptr();
  k.value = value;
  k.int_value = static_cast<std::int64_t>(value);
  detail::declare_accesses("Tensor::fill_", device(), {}, {{this, "self"}});
  detail::run_kernel(device(), k);
  return *this;
}

Tensor Tensor::add(const Tensor& other, double alpha) const {
  CUDASCOPE_CHECK(defined() && other.defined() && dtype_ == other.dtype_ && sizes_ == other.sizes_ &&
                      device() == other.device(),
                  cerr::kInvalidValue, "Tensor::add", "add needs tensors of the same dtype, sizes and device");
  const Tensor a = contiguous();
  const Tensor b = other.contiguous();
  Tensor out = empty(sizes_, TensorOptions{}.with_dtype(dtype_).with_device(device()));
  TensorKernel k;
  k.op = TensorKernel::Op::kAdd;
  k.dtype = dtype_;
  k.numel = numel();
  k.out = out.data_ptr();
  k.a = a.data_ptr();
  k.b = b.data_ptr();
  k.value = alpha;
  detail::declare_accesses("Tensor::add", device(), {{&a, "self"}, {&b, "other"}}, {{&out, nullptr}});
  detail::run_kernel(device(), k);
  return out;
}

Tensor Tensor::sum() const {
  const Tensor a = contiguous();
  const DType out_dtype = cuda::detail::sum_dtype(dtype_);
  Tensor out = zeros({}, TensorOptions{}.with_dtype(out_dtype).with_device(device()));
  TensorKernel k;
  k.op = TensorKernel::Op::kSum;
  k.dtype = dtype_;
  k.numel = numel();
  k.out = out.data_ptr();
  k.a = a.data_ptr();
  detail::declare_accesses("Tensor::sum", device(), {{&a, "self"}}, {{&out, nullptr}});
  detail::run_kernel(device(), k);
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int dim) {
  CUDASCOPE_CHECK(!tensors.empty(), cerr::kInvalidValue, "cudascope::cat", "cat needs at least one tensor");
  const Tensor& first = tensors.front();
  const std::int64_t ndim = first.dim();
  const int d = dim < 0 ? static_cast<int>(dim + ndim) : dim;
  CUDASCOPE_CHECK(d >= 0 && d < ndim, cerr::kInvalidValue, "cudascope::cat",
                  "dimension " + std::to_string(dim) + " is out of range for tensors of " + std::to_string(ndim) +
                      " dimensions");
  std::vector<std::int64_t> sizes = first.sizes();
  sizes[static_cast<std::size_t>(d)] = 0;
  for (const Tensor& t : tensors) {
    bool same = t.dtype() == first.dtype() && t.device() == first.device() && t.dim() == ndim;
    for (std::int64_t i = 0; same && i < ndim; ++i) {
      same = i == d || t.sizes()[static_cast<std::size_t>(i)] == first.sizes()[static_cast<std::size_t>(i)];
    }
    CUDASCOPE_CHECK(same, cerr::kInvalidValue, "cudascope::cat",
                    "tensors must have the same dtype, device and sizes except in dimension " + std::to_string(dim));
    sizes[static_cast<std::size_t>(d)] += t.sizes()[static_cast<std::size_t>(d)];
  }
  Tensor out = empty(sizes, TensorOptions{}.with_dtype(first.dtype()).with_device(first.device()));
  std::int64_t start = 0;
  for (const Tensor& t : tensors) {
    const std::int64_t length = t.sizes()[static_cast<std::size_t>(d)];
    out.narrow(d, start, length).copy_(t);
    start += length;
  }
  return out;
}

}  // namespace cudascope
