// backend:cudaMallocAsync: stream-ordered allocation by the driver's memory pool. On the
// cuda backend cudaMallocAsync/cudaFreeAsync are looked up in the loaded CUDA runtime; the
// sim device has no pools and allocates directly (its streams complete work in order, so
// the observable behaviour is the same).
#include "raw_allocator.h"

#include <cudascope/cuda/error.h>

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

namespace cudascope::cuda::detail::alloc {
namespace {

using MallocAsync = int (*)(void**, std::size_t, void*);
using FreeAsync = int (*)(void*, void*);

class AsyncAllocator final : public RawAllocator {
 public:
  explicit AsyncAllocator(Backend& backend) : backend_(backend) {
    if (std::strcmp(backend.name(), "cuda") == 0) {
      malloc_async_ = reinterpret_cast<MallocAsync>(dlsym(RTLD_DEFAULT, "cudaMallocAsync"));
      free_async_ = reinterpret_cast<FreeAsync>(dlsym(RTLD_DEFAULT, "cudaFreeAsync"));
    }
  }
  std::string name() const override { return "cudaMallocAsync"; }

  void* alloc(std::size_t size, int device, StreamHandle stream) override {
    void* ptr = nullptr;
    if (malloc_async_ != nullptr) {
      backend_.set_device(device);
      if (malloc_async_(&ptr, size, stream) != 0) ptr = nullptr;
    } else {
      ptr = backend_.malloc(device, size);
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
    if (free_async_ != nullptr) {
      backend_.set_device(l.device);
      free_async_(ptr, l.stream);
    } else {
      backend_.free(l.device, ptr);
    }
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
  MallocAsync malloc_async_ = nullptr;
  FreeAsync free_async_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<void*, Live> live_;
  std::unordered_map<int, DeviceStats> stats_;
};

}  // namespace

std::unique_ptr<RawAllocator> make_async_allocator(Backend& backend) {
  return std::make_unique<AsyncAllocator>(backend);
}

}  // namespace cudascope::cuda::detail::alloc
