// cudascope::Tensor: storage, views, factories and reading values back.
#include "storage.h"
#include "scalar_convert.h"
#include "../sanitizer/hooks.h"
#include "tensor_kernels.h"

#include "../check.h"
#include "../runtime_state.h"

#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/memory.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cudascope {

namespace cerr = cuda::error_code;
using cuda::detail::TensorKernel;

std::size_t element_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
    case DType::kInt64: return 8;
    case DType::kInt32: return 4;
    case DType::kUInt8: return 1;
    case DType::kBool: return 1;
  }
  return 1;
}

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "?";
}

bool is_floating_point(DType dtype) noexcept {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Storage::Storage(Kind kind, int device, std::size_t bytes)
    : kind_(kind), device_(kind == Kind::kDevice ? device : -1), bytes_(bytes) {
  if (bytes == 0) return;
  switch (kind) {
    case Kind::kDevice: data_ = cuda::caching_allocator_alloc(bytes, device); break;
    case Kind::kPinnedHost: data_ = cuda::host::allocate(bytes); break;
    case Kind::kPageableHost:
      data_ = std::malloc(bytes);
      CUDASCOPE_CHECK(data_ != nullptr, cerr::kMemoryAllocation, "malloc",
                      "could not allocate " + std::to_string(bytes) + " bytes of host memory");
      break;
  }
  // The stream sanitizer: a block handed out again starts with no history.
  if (kind == Kind::kDevice && cuda::sanitizer::detail::active()) cuda::sanitizer::detail::memory_allocated(data_);
}

Storage::Storage(int device, void* data, std::size_t bytes, std::shared_ptr<void> owner)
    : kind_(Kind::kDevice), device_(device), bytes_(bytes), data_(data), owner_(std::move(owner)) {
  if (data_ != nullptr && cuda::sanitizer::detail::active()) cuda::sanitizer::detail::memory_allocated(data_);
}

Storage::~Storage() {
  if (data_ == nullptr) return;
  if (kind_ == Kind::kDevice && cuda::sanitizer::detail::active()) {
    try {
      cuda::sanitizer::detail::memory_freed(data_);
    } catch (...) {
    }
  }
  if (owner_) return;  // an owner releases what it owns when dropped
  try {
    if (keeper_) {
      keeper_(data_);  // lent to other processes (ipc.h): the keeper frees it later
      return;
    }
    switch (kind_) {
      case Kind::kDevice: cuda::caching_allocator_delete(data_); break;
      case Kind::kPinnedHost: cuda::host::free(data_); break;
      case Kind::kPageableHost: std::free(data_); break;
    }
  } catch (...) {
    // A destructor cannot throw; the allocators report misuse to the callers that cause it.
  }
}

Tensor TensorAccess::make(std::shared_ptr<Storage> storage, DType dtype, std::vector<std::int64_t> sizes,
                          std::vector<std::int64_t> strides, std::int64_t offset) {
  Tensor t;
  t.storage_ = std::move(storage);
  t.dtype_ = dtype;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size());
  std::int64_t stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d] > 0 ? sizes[d] : 1;
  }
  return strides;
}

Device Tensor::device() const noexcept {
  if (storage_ == nullptr || !storage_->is_device()) return Device::cpu();
  return Device::cuda(storage_->device());
}

namespace {
int checked_dim(int dim, std::int64_t ndim, const char* call) {
  const std::int64_t resolved = dim < 0 ? dim + ndim : dim;
  CUDASCOPE_CHECK(resolved >= 0 && resolved < ndim, cerr::kInvalidValue, call,
                  "dimension " + std::to_string(dim) + " is out of range for a tensor of " + std::to_string(ndim) +
                      " dimensions");
  return static_cast<int>(resolved);
}
}  // namespace

std::int64_t Tensor::size(int dim) const { return sizes_[static_cast<std::size_t>(checked_dim(dim, this->dim(), "Tensor::size"))]; }

std::int64_t Tensor::numel() const noexcept {
  if (storage_ == nullptr) return 0;
  std::int64_t n = 1;
  for (std::int64_t s : sizes_) n *= s;
  return n;
}

bool Tensor::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (std::size_t d = sizes_.size(); d-- > 0;) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

bool Tensor::is_pinned() const noexcept { return storage_ != nullptr && storage_->kind() == Storage::Kind::kPinnedHost; }

void* Tensor::data_ptr() const noexcept {
  if (storage_ == nullptr || storage_->data() == nullptr) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(element_size(dtype_));
}

template <typename T>
T* Tensor::data_ptr() const {
  constexpr DType expected = std::is_same_v<T, float>          ? DType::kFloat32
                             : std::is_same_v<T, std::int64_t> ? DType::kInt64
                             : std::is_same_v<T, std::int32_t> ? DType::kInt32
                             : std::is_same_v<T, std::uint8_t> ? DType::kUInt8
                                                               : DType::kBool;
  CUDASCOPE_CHECK(dtype_ == expected, cerr::kInvalidValue, "Tensor::data_ptr<T>",
                  std::string("the tensor's dtype is ") + dtype_name(dtype_) + ", not " + dtype_name(expected));
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data_ptr<float>() const;
template std::int64_t* Tensor::data_ptr<std::int64_t>() const;
template std::int32_t* Tensor::data_ptr<std::int32_t>() const;
template std::uint8_t* Tensor::data_ptr<std::uint8_t>() const;
template bool* Tensor::data_ptr<bool>() const;

Tensor Tensor::narrow(int dim, std::int64_t start, std::int64_t length) const {
  const int d = checked_dim(dim, this->dim(), "Tensor::narrow");
  const std::int64_t size = sizes_[static_cast<std::size_t>(d)];
  CUDASCOPE_CHECK(start >= 0 && length >= 0 && start + length <= size, cerr::kInvalidValue, "Tensor::narrow",
                  "start " + std::to_string(start) + " + length " + std::to_string(length) + " exceeds size " +
                      std::to_string(size) + " of dimension " + std::to_string(dim));
  Tensor out = *this;
  out.sizes_[static_cast<std::size_t>(d)] = length;
  out.offset_ += start * strides_[static_cast<std::size_t>(d)];
  return out;
}

Tensor Tensor::view(std::vector<std::int64_t> sizes) const {
  CUDASCOPE_CHECK(is_contiguous(), cerr::kInvalidValue, "Tensor::view", "view() needs a contiguous tensor; call contiguous()");
  std::int64_t n = 1;
  for (std::int64_t s : sizes) n *= s;
  CUDASCOPE_CHECK(n == numel(), cerr::kInvalidValue, "Tensor::view",
                  "shape of " + std::to_string(n) + " elements is invalid for a tensor of " + std::to_string(numel()));
  Tensor out = *this;
  out.strides_ = contiguous_strides(sizes);
  out.sizes_ = std::move(sizes);
  return out;
}

std::vector<Tensor> Tensor::chunk(std::int64_t chunks, int dim) const {
  CUDASCOPE_CHECK(chunks > 0, cerr::kInvalidValue, "Tensor::chunk", "chunks must be positive, got " + std::to_string(chunks));
  const int d = checked_dim(dim, this->dim(), "Tensor::chunk");
  const std::int64_t size = sizes_[static_cast<std::size_t>(d)];
  const std::int64_t each = (size + chunks - 1) / chunks;
  std::vector<Tensor> out;
  if (each == 0) return {*this};
  for (std::int64_t start = 0; start < size; start += each) out.push_back(narrow(d, start, std::min(each, size - start)));
  return out;
}

double Tensor::item(std::initializer_list<std::int64_t> index) const {
  CUDASCOPE_CHECK(defined() && device().is_cpu(), cerr::kInvalidValue, "Tensor::item",
                  "item() reads CPU tensors; call cpu() first");
  CUDASCOPE_CHECK(static_cast<std::int64_t>(index.size()) == dim(), cerr::kInvalidValue, "Tensor::item",
                  "item() needs one index per dimension (" + std::to_string(dim()) + ")");
  std::int64_t offset = 0;
  std::size_t d = 0;
  for (std::int64_t i : index) {
    CUDASCOPE_CHECK(i >= 0 && i < sizes_[d], cerr::kInvalidValue, "Tensor::item", "index out of range");
    offset += i * strides_[d++];
  }
  const Tensor element = TensorAccess::make(storage_, dtype_, {}, {}, offset_ + offset);
  return element.to_vector()[0];
}

// Factories.

namespace {
Device resolved(Device device) {
  if (device.is_cpu()) return Device::cpu();
  return Device::cuda(cuda::detail::resolve_device(device.index));
}
}  // namespace

Tensor empty(std::vector<std::int64_t> sizes, TensorOptions options) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) {
    CUDASCOPE_CHECK(s >= 0, cerr::kInvalidValue, "cudascope::empty", "negative size " + std::to_string(s));
    n *= s;
  }
  const Device device = resolved(options.device);
  CUDASCOPE_CHECK(!(options.pin_memory && device.is_cuda()), cerr::kInvalidValue, "cudascope::empty",
                  "pin_memory applies to CPU tensors only");
  const auto kind = device.is_cuda() ? Storage::Kind::kDevice
                    : options.pin_memory ? Storage::Kind::kPinnedHost
                                         : Storage::Kind::kPageableHost;
  auto storage = std::make_shared<Storage>(kind, device.index, static_cast<std::size_t>(n) * element_size(options.dtype));
  std::vector<std::int64_t> strides = contiguous_strides(sizes);
  return TensorAccess::make(std::move(storage), options.dtype, std::move(sizes), std::move(strides), 0);
}

Tensor full(std::vector<std::int64_t> sizes, double value, TensorOptions options) {
  Tensor t = empty(std::move(sizes), options);
  t.fill_(value);
  return t;
}

Tensor zeros(std::vector<std::int64_t> sizes, TensorOptions options) { return full(std::move(sizes), 0, options); }
Tensor ones(std::vector<std::int64_t> sizes, TensorOptions options) { return full(std::move(sizes), 1, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  CUDASCOPE_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end), cerr::kInvalidValue, "cudascope::arange",
                  "step must be non-zero and the bounds finite");
  CUDASCOPE_CHECK((end - start) / step >= 0, cerr::kInvalidValue, "cudascope::arange",
                  "upper bound and larger bound inconsistent with step sign");
  const auto n = static_cast<std::int64_t>(std::ceil((end - start) / step));
  Tensor t = empty({n}, options);
  TensorKernel k;
  k.op = TensorKernel::Op::kArange;
  k.dtype = t.dtype();
  k.numel = n;
  k.out = t.data_ptr();
  k.value = start;
  k.step = step;
  detail::run_kernel(t.device(), k);
  return t;
}

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

// Reading values back.

std::vector<double> Tensor::to_vector() const {
  const Tensor host = device().is_cpu() ? *this : cpu();
  std::vector<double> values(static_cast<std::size_t>(numel()));
  std::vector<std::int64_t> index(sizes_.size(), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * host.strides()[d];
    const char* element = static_cast<const char*>(host.data_ptr()) + offset * static_cast<std::int64_t>(element_size(dtype_));
    switch (dtype_) {
      case DType::kFloat32: { float f; std::memcpy(&f, element, 4); values[i] = f; break; }
      case DType::kFloat16: { std::uint16_t h; std::memcpy(&h, element, 2); values[i] = detail::half_to_float(h); break; }
      case DType::kBFloat16: { std::uint16_t h; std::memcpy(&h, element, 2); values[i] = detail::bfloat16_to_float(h); break; }
      case DType::kInt64: { std::int64_t v; std::memcpy(&v, element, 8); values[i] = static_cast<double>(v); break; }
      case DType::kInt32: { std::int32_t v; std::memcpy(&v, element, 4); values[i] = v; break; }
      case DType::kUInt8: values[i] = static_cast<std::uint8_t>(*element); break;
      case DType::kBool: values[i] = *element != 0 ? 1 : 0; break;
    }
    for (std::size_t d = index.size(); d-- > 0;) {
      if (++index[d] < sizes_[d]) break;
      index[d] = 0;
    }
  }
  return values;
}

bool Tensor::equal(const Tensor& other) const {
  if (dtype_ != other.dtype_ || sizes_ != other.sizes_) return false;
  return to_vector() == other.to_vector();
}

}  // namespace cudascope

namespace cudascope::cuda {
DeviceGuard device_of(const Tensor& tensor) noexcept { return DeviceGuard(tensor.device().is_cuda() ? tensor.device().index : -1); }
}  // namespace cudascope::cuda
