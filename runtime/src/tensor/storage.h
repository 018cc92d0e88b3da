#pragma once
// A tensor's memory: device memory from the caching allocator, pinned host memory from the
// caching host allocator, or pageable host memory. Freed when the last Tensor sharing it goes.

#include <cudascope/cuda/tensor.h>

#include <cstddef>

namespace cudascope {

class Storage {
 public:
  enum class Kind : std::uint8_t { kDevice, kPinnedHost, kPageableHost };

  // Allocates `bytes` (0: no memory). `device` is the CUDA device for kDevice, else ignored.
  Storage(Kind kind, int device, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  Kind kind() const noexcept { return kind_; }
  bool is_device() const noexcept { return kind_ == Kind::kDevice; }
  int device() const noexcept { return device_; }  // -1 for host memory

 private:
  Kind kind_;
  int device_;
  std::size_t bytes_;
  void* data_ = nullptr;
};

// Internal access to a Tensor's fields for the runtime's tensor files.
class TensorAccess {
 public:
  static Tensor make(std::shared_ptr<Storage> storage, DType dtype, std::vector<std::int64_t> sizes,
                     std::vector<std::int64_t> strides, std::int64_t offset);
};

// Row-major strides for `sizes`.
std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& sizes);

}  // namespace cudascope
