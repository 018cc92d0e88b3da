// CUDAPluggableAllocator: an allocator from a shared library, with torch's signatures.
// It keeps what it handed out (pointer -> size, device, stream) since free_fn needs them.
#include "raw_allocator.h"

#include "../check.h"
#include "../tool_loader.h"

#include <cudascope/cuda/memory.h>

#include <mutex>
#include <unordered_map>

namespace cudascope::cuda {
namespace detail::alloc {
namespace {

using AllocFn = void* (*)(std::size_t, int, void*);
using FreeFn = void (*)(void*, std::size_t, int, void*);

class PluggableAllocator final : public RawAllocator {
 public:
  PluggableAllocator(void* alloc_fn, void* free_fn)
      : alloc_(reinterpret_cast<AllocFn>(alloc_fn)), free_(reinterpret_cast<FreeFn>(free_fn)) {}
  std::string name() const override { return "pluggable"; }

  void* alloc(std::size_t size, int device, StreamHandle stream) override {
    void* ptr = alloc_(size, device, stream);
    if (ptr == nullptr) {
      throw OutOfMemoryError("CUDAPluggableAllocator alloc_fn", __FILE__, __LINE__,
                             "the pluggable allocator returned nullptr for " + std::to_string(size) + " bytes on device " +
                                 std::to_string(device));
    }
    std::lock_guard lock(mutex_);
    live_[ptr] = Live{size, device, stream};
    Counts& c = counts(device);
    c.stats.allocation.increase(kLargePool, 1);
    c.stats.allocated_bytes.increase(kLargePool, static_cast<std::int64_t>(size));
    c.stats.requested_bytes.increase(kLargePool, static_cast<std::int64_t>(size));
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
      Counts& c = counts(l.device);
      c.stats.allocation.decrease(kLargePool, 1);
      c.stats.allocated_bytes.decrease(kLargePool, static_cast<std::int64_t>(l.size));
      c.stats.requested_bytes.decrease(kLargePool, static_cast<std::int64_t>(l.size));
    }
    free_(ptr, l.size, l.device, l.stream);
    return true;
  }

  DeviceStats stats(int device) override {
    std::lock_guard lock(mutex_);
    return counts(device).stats;
  }
  void reset_peak(int device) override {
    std::lock_guard lock(mutex_);
    counts(device).stats.reset_peak();
  }
  void reset_accumulated(int device) override {
    std::lock_guard lock(mutex_);
    counts(device).stats.reset_accumulated();
  }

 private:
  struct Live {
    std::size_t size = 0;
    int device = 0;
    StreamHandle stream = nullptr;
  };
  struct Counts {
    DeviceStats stats;
  };
  Counts& counts(int device) { return per_device_[device]; }

  AllocFn alloc_;
  FreeFn free_;
  std::mutex mutex_;
  std::unordered_map<void*, Live> live_;
  std::unordered_map<int, Counts> per_device_;
};

}  // namespace

std::unique_ptr<RawAllocator> make_pluggable_allocator(void* alloc_fn, void* free_fn) {
  return std::make_unique<PluggableAllocator>(alloc_fn, free_fn);
}

}  // namespace detail::alloc

CUDAPluggableAllocator::CUDAPluggableAllocator(const std::string& path, const std::string& alloc_fn_name,
                                               const std::string& free_fn_name)
    : path_(path) {
  // The library stays loaded for the life of the process: its allocations may outlive us.
  const auto fns = detail::tools::open_pluggable_allocator(path, alloc_fn_name, free_fn_name);
  alloc_fn_ = fns.alloc_fn;
  free_fn_ = fns.free_fn;
}

}  // namespace cudascope::cuda
