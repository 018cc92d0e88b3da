#pragma once
// Allocators other than the native caching allocator that can serve the process:
// cudaMallocAsync (backend:cudaMallocAsync) and a pluggable allocator from a shared
// library (change_current_allocator). Implementations are thread-safe.

#include "stats.h"

#include "../backend/backend.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cudascope::cuda::detail::alloc {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual std::string name() const = 0;
  virtual void* alloc(std::size_t size, int device, StreamHandle stream) = 0;
  // false when `ptr` was not allocated here (nothing changed).
  virtual bool free(void* ptr) = 0;
  virtual void empty_cache() {}
  // What the allocator can say: allocations and bytes in use, per device.
  virtual DeviceStats stats(int device) = 0;
  virtual void reset_peak(int device) = 0;
  virtual void reset_accumulated(int device) = 0;
};

std::unique_ptr<RawAllocator> make_async_allocator(Backend& backend);
std::unique_ptr<RawAllocator> make_pluggable_allocator(void* alloc_fn, void* free_fn);

}  // namespace cudascope::cuda::detail::alloc
