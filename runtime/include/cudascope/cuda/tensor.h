#pragma once
// cudascope::Tensor: a deliberately minimal tensor, just what the torch.cuda-equivalent API
// needs (copies, pinned memory, RNG, record_stream). Not a tensor library.
//
// A Tensor is a view (sizes, strides in elements, an element offset) of a reference-counted
// Storage: device memory from the caching allocator, or host memory (pageable, or pinned from
// the caching host allocator, host_memory.h). Device work is queued on the current stream of
// the tensor's device, as in torch; host reads of a device tensor go through cpu().
//
// Copies synchronise as torch documents: device<->host with non_blocking=false waits for the
// copy (a synchronizing call, seen by sync-debug mode); with non_blocking=true and pinned host
// memory the copy is asynchronous and the pinned block is kept from reuse until the copy is
// done; pageable host memory is always copied synchronously with respect to the host.
//
// Thread-safety: distinct Tensors may be used from any thread; one Tensor (and views sharing
// its storage) needs the caller's synchronisation for writes, as in torch.

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/stream.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace cudascope {

enum class DType : std::uint8_t { kFloat32, kFloat16, kBFloat16, kInt64, kInt32, kUInt8, kBool };

// Bytes per element; "float32", "int64", ... as torch prints them without the "torch." prefix.
std::size_t element_size(DType dtype) noexcept;
const char* dtype_name(DType dtype) noexcept;
bool is_floating_point(DType dtype) noexcept;

// CPU, or CUDA device `index` (-1: the current device, resolved when a tensor is made).
struct Device {
  enum class Type : std::uint8_t { kCPU, kCUDA };
  Type type = Type::kCPU;
  int index = -1;

  static Device cpu() noexcept { return {Type::kCPU, -1}; }
  static Device cuda(int index = -1) noexcept { return {Type::kCUDA, index}; }
  bool is_cuda() const noexcept { return type == Type::kCUDA; }
  bool is_cpu() const noexcept { return type == Type::kCPU; }
  std::string str() const;  // "cpu", "cuda:0"
  friend bool operator==(const Device& a, const Device& b) noexcept {
    return a.type == b.type && (a.type == Type::kCPU || a.index == b.index);
  }
};

// Factory options: dtype, device, and for CPU tensors whether the memory is pinned.
struct TensorOptions {
  DType dtype = DType::kFloat32;
  Device device = Device::cpu();
  bool pin_memory = false;

  TensorOptions& with_dtype(DType d) noexcept { dtype = d; return *this; }
  TensorOptions& with_device(Device d) noexcept { device = d; return *this; }
  TensorOptions& pinned(bool p = true) noexcept { pin_memory = p; return *this; }
};

class Storage;

class Tensor {
 public:
  Tensor() = default;  // undefined: numel 0, defined() false

  bool defined() const noexcept { return storage_ != nullptr; }
  DType dtype() const noexcept { return dtype_; }
  Device device() const noexcept;
  bool is_cuda() const noexcept { return device().is_cuda(); }
  const std::vector<std::int64_t>& sizes() const noexcept { return sizes_; }
  const std::vector<std::int64_t>& strides() const noexcept { return strides_; }
  std::int64_t size(int dim) const;
  std::int64_t dim() const noexcept { return static_cast<std::int64_t>(sizes_.size()); }
  std::int64_t numel() const noexcept;
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel()) * element_size(dtype_); }
  std::int64_t storage_offset() const noexcept { return offset_; }
  bool is_contiguous() const noexcept;
  // True for host memory from the caching host allocator.
  bool is_pinned() const noexcept;

  // The first element's address (device or host). Typed access checks the dtype; T is one of
  // float, std::int64_t, std::int32_t, std::uint8_t, bool.
  void* data_ptr() const noexcept;
  template <typename T>
  T* data_ptr() const;

  // Copies `src` into this tensor (same dtype and number of elements; any devices). Returns *this.
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  // This tensor on `device` (itself when already there), as torch's to(device).
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor cuda(int device = -1, bool non_blocking = false) const { return to(Device::cuda(device), non_blocking); }
  Tensor cpu(bool non_blocking = false) const { return to(Device::cpu(), non_blocking); }
  // A pinned copy of a CPU tensor (itself when already pinned).
  Tensor pin_memory() const;
  // A contiguous tensor with the same values (itself when already contiguous).
  Tensor contiguous() const;

  // Keeps the storage's device memory from reuse until the work queued on `stream` when the
  // storage is freed has completed (torch's record_stream). CUDA tensors only.
  void record_stream(const cuda::Stream& stream) const;

  Tensor& fill_(double value);
  // this + alpha * other, same dtype, sizes and device.
  Tensor add(const Tensor& other, double alpha = 1.0) const;
  // The sum of all elements as a 0-dim tensor on the same device: float dtypes keep their
  // dtype (accumulated in float32), integers and bool give int64, as torch.
  Tensor sum() const;
  // Views.
  Tensor narrow(int dim, std::int64_t start, std::int64_t length) const;
  Tensor view(std::vector<std::int64_t> sizes) const;  // contiguous tensors only
  // torch.chunk: up to `chunks` views of ceil(size/chunks) along `dim` (the last may be smaller).
  std::vector<Tensor> chunk(std::int64_t chunks, int dim = 0) const;

  // Element-wise equality of dtype, sizes and values (reads device tensors back; a
  // synchronizing call). For tests.
  bool equal(const Tensor& other) const;
  // The values as doubles in row-major order (reads device tensors back).
  std::vector<double> to_vector() const;
  // One element's value (CPU tensors only; a device tensor throws, naming cpu()).
  double item(std::initializer_list<std::int64_t> index = {}) const;

  const std::shared_ptr<Storage>& storage() const noexcept { return storage_; }

 private:
  friend class TensorAccess;
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kFloat32;
  std::vector<std::int64_t> sizes_;
  std::vector<std::int64_t> strides_;
  std::int64_t offset_ = 0;  // in elements
};

// Factories. Sizes may be empty (a 0-dim tensor of one element).
Tensor empty(std::vector<std::int64_t> sizes, TensorOptions options = {});
Tensor zeros(std::vector<std::int64_t> sizes, TensorOptions options = {});
Tensor ones(std::vector<std::int64_t> sizes, TensorOptions options = {});
Tensor full(std::vector<std::int64_t> sizes, double value, TensorOptions options = {});
// [start, end) in steps of `step`, as torch.arange (1-D).
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
Tensor arange(double end, TensorOptions options = {});
// Uniform [0, 1) and standard normal numbers from the device's default generator (random.h).
// CUDA tensors of float32, float16 or bfloat16; equal to torch.rand / torch.randn on the same
// device after the same manual_seed.
Tensor rand(std::vector<std::int64_t> sizes, TensorOptions options);
Tensor randn(std::vector<std::int64_t> sizes, TensorOptions options);
// Concatenation along `dim` (same dtype and device; other sizes equal).
Tensor cat(const std::vector<Tensor>& tensors, int dim = 0);

}  // namespace cudascope

namespace cudascope::cuda {
// torch.cuda.device_of(tensor): a guard making the tensor's device current (no-op for CPU).
DeviceGuard device_of(const Tensor& tensor) noexcept;
}  // namespace cudascope::cuda
