#include "opened_segments.h"

#include "../runtime_state.h"

#include <cstdio>

namespace cudascope::cuda::detail::ipc {

std::shared_ptr<void> OpenedSegments::open(int device, const IpcMemHandle& handle) {
  std::lock_guard lock(mutex_);
  if (auto found = opened_.find(handle); found != opened_.end()) {
    if (auto alive = found->second.lock()) return alive;
  }
  Backend& backend = lazy_backend();
  void* base = backend.ipc_open_mem_handle(device, handle);
  std::shared_ptr<void> segment(base, [this, &backend, device, handle](void* ptr) {
    std::lock_guard close_lock(mutex_);
    try {
      backend.ipc_close_mem_handle(device, ptr);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope: closing an IPC memory handle failed: %s\n", e.what());
    }
    // Only an expired entry: a later open of the same handle may have replaced it.
    if (auto found = opened_.find(handle); found != opened_.end() && found->second.expired()) opened_.erase(found);
  });
  opened_[handle] = segment;
  return segment;
}

std::size_t OpenedSegments::open_count() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [handle, segment] : opened_) count += segment.expired() ? 0 : 1;
  return count;
}

}  // namespace cudascope::cuda::detail::ipc
