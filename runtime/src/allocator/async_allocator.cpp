// backend:cudaMallocAsync: stream-ordered allocation by the driver's memory pool
// (cudaMallocAsync / cudaFreeAsync of the runtime's own CUDA runtime; the sim device frees on
// the stream). Each call makes the block's device current, as cudaMallocAsync needs, and
// restores the device it found, as PyTorch's CudaMallocAsyncAllocator does with a CUDAGuard:
// the caller's current device is never changed behind its back.
#include "raw_allocator.h"

#include <cudascope/cuda/error.h>

#include <mutex>
#include <unordered_map>

namespace cudascope::cuda::detail::alloc {
namespace {

// The backend's current device set to `device` for one call, the previous one restored.
class OnDevice {
 public:
  OnDevice(Backend& backend, int device) : backend_(backend), previous_(backend.current_device()) {
    if (previous_ != device) backend_.set_device(device);
    else previous_ = -1;
  }
  ~OnDevice() {
    if (previous_ < 0) return;
    try {
      backend_.set_device(previous_);
    } catch (...) {
      // The device was valid a moment ago; nothing useful to do in a destructor.
    }
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  Backend& backend_;
  int previous_;
};

class AsyncAllocator final : public RawAllocator {
 public:
  explicit AsyncAllocator(Backend& backend) : backend_(backend) {}
  std::string name() const override { return "cudaMallocAsync"; }

  void* alloc(std::size_t size, int device, StreamHandle stream) override {
    void* ptr = nullptr;
    {
      OnDevice on(backend_, device);
      ptr = backend_.malloc_async(device, size, stream);
    }
    if (ptr == nullptr) {
      throw OutOfMemoryError("cudaMallocAsync", __FILE__, __LINE__,
                             "CUDA out of memory. Tried to allocate " + std::to_string(size) + " bytes on device " +
                                 std::to_string(device));
    }
    std::lock_guard lock(mutex_);
    live_[ptr] = Live{size, device, stream};
    DeviceStats& s = stats_[device];
    for (StatArray* a : {&s.allocation, &s.active}) a->increase(kLargePool, 1);
    for (StatArray* a : {&s.allocated_bytes, &s.active_bytes, &s.requested_bytes, &s.reserved_bytes}) {
      a->increase(kLargePool, static_cast<std::int64_t>(size));
    }
    return ptr;
  }

  bool free(void* ptr) override {
    Live l;
    {
      std::lock_guard lock(mutex_);
      auto it = live_.find(ptr);
      if (it == live_.end()) return false;
      l = it->second;
      live_.erase(it);
      DeviceStats& s = stats_[l.device];
      for (StatArray* a : {&s.allocation, &s.active}) a->decrease(kLargePool, 1);
      for (StatArray* a : {&s.allocated_bytes, &s.active_bytes, &s.requested_bytes, &s.reserved_bytes}) {
        a->decrease(kLargePool, static_cast<std::int64_t>(l.size));
      }
    }
    OnDevice on(backend_, l.device);
    backend_.free_async(l.device, ptr, l.stream);
    return true;
  }

  DeviceStats stats(int device) override {
    std::lock_guard lock(mutex_);
    return stats_[device];
  }
  void reset_peak(int device) override {
    std::lock_guard lock(mutex_);
    stats_[device].reset_peak();
  }
  void reset_accumulated(int device) override {
    std::lock_guard lock(mutex_);
    stats_[device].reset_accumulated();
  }

 private:
  struct Live {
    std::size_t size = 0;
    int device = 0;
    StreamHandle stream = nullptr;
  };
  Backend& backend_;
  std::mutex mutex_;
  std::unordered_map<void*, Live> live_;
  std::unordered_map<int, DeviceStats> stats_;
};

}  // namespace

std::unique_ptr<RawAllocator> make_async_allocator(Backend& backend) {
  return std::make_unique<AsyncAllocator>(backend);
}

}  // namespace cudascope::cuda::detail::alloc
