#pragma once
// A tensor's memory: device memory from the caching allocator, pinned host memory from the
// caching host allocator, or pageable host memory. Freed when the last Tensor sharing it goes.

#include <cudascope/cuda/tensor.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace cudascope {

class Storage {
 public:
  enum class Kind : std::uint8_t { kDevice, kPinnedHost, kPageableHost };

  // Allocates `bytes` (0: no memory). `device` is the CUDA device for kDevice, else ignored.
  Storage(Kind kind, int device, std::size_t bytes);
  // Device memory this storage does not allocate (another process's, opened through CUDA
  // IPC): released by dropping `owner` when the storage goes.
  Storage(int device, void* data, std::size_t bytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  Kind kind() const noexcept { return kind_; }
  bool is_device() const noexcept { return kind_ == Kind::kDevice; }
  int device() const noexcept { return device_; }  // -1 for host memory
  // Memory another process allocated (CUDA IPC), not the caching allocator's.
  bool is_external() const noexcept { return owner_ != nullptr; }

  // Device memory lent to other processes (ipc.h): when the last Tensor lets go, the memory
  // is handed to `keeper` (which frees it once no other process uses it) instead of being
  // freed. Set once, by the first share; the caller holds the storage.
  void lend(std::function<void(void* data)> keeper) { keeper_ = std::move(keeper); }
  bool is_lent() const noexcept { return static_cast<bool>(keeper_); }

 private:
  Kind kind_;
  int device_;
  std::size_t bytes_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
  std::function<void(void* data)> keeper_;
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
