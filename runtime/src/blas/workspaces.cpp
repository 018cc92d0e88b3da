#include "workspaces.h"

#include <cudascope/cuda/memory.h>

#include <mutex>
#include <vector>

namespace cudascope::cuda::detail::blas {

void* Workspaces::get(void* handle, int device, StreamHandle stream, std::size_t size) {
  const Key key{handle, stream};
  {
    std::shared_lock lock(mutex_);
    const auto found = entries_.find(key);
    if (found != entries_.end() && found->second.size >= size) return found->second.ptr;
  }
  // Allocate outside the lock (the allocator may free caches and retry), as torch does.
  void* fresh = caching_allocator_alloc(size, device);
  void* displaced = nullptr;
  void* result = nullptr;
  {
    std::unique_lock lock(mutex_);
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      entries_.emplace(key, Entry{device, fresh, size});
      result = fresh;
    } else if (found->second.size < size) {
      displaced = found->second.ptr;
      found->second = Entry{device, fresh, size};
      result = fresh;
    } else {
      displaced = fresh;  // a concurrent call got there first
      result = found->second.ptr;
    }
  }
  caching_allocator_delete(displaced);
  return result;
}

void Workspaces::clear() {
  std::vector<void*> freed;
  {
    std::unique_lock lock(mutex_);
    for (const auto& [key, entry] : entries_) freed.push_back(entry.ptr);
    entries_.clear();
  }
  for (void* ptr : freed) caching_allocator_delete(ptr);
}

void Workspaces::clear_stream(int device, StreamHandle stream) {
  std::vector<void*> freed;
  {
    std::unique_lock lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->first.second == stream && it->second.device == device) {
        freed.push_back(it->second.ptr);
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (void* ptr : freed) caching_allocator_delete(ptr);
}

std::pair<std::size_t, std::size_t> Workspaces::count_and_bytes(int device) const {
  std::shared_lock lock(mutex_);
  std::size_t count = 0, bytes = 0;
  for (const auto& [key, entry] : entries_) {
    if (entry.device != device) continue;
    ++count;
    bytes += entry.size;
  }
  return {count, bytes};
}

}  // namespace cudascope::cuda::detail::blas
