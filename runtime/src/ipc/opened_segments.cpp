#include "opened_segments.h"

#include "../runtime_state.h"

#include <cstdio>

namespace cudascope::cuda::detail::ipc {

std::shared_ptr<void> OpenedSegments::open(int device, const IpcMemHandle& handle) {
  std::unique_lock lock(mutex_);
  for (auto found = opened_.find(handle); found != opened_.end(); found = opened_.find(handle)) {
    if (auto alive = found->second.lock()) return alive;
    // Expired but not closed yet: its deleter is waiting for this lock. Opening now would map
    // the handle a second time while the first mapping is being closed (CUDA maps a handle
    // once per context and counts opens; the sim would map it twice): wait for the close.
    closed_.wait(lock);
  }
  void* base = lazy_backend().ipc_open_mem_handle(device, handle);
  std::shared_ptr<void> segment(base, [this, device, handle](void* ptr) { close(device, handle, ptr); });
  opened_.emplace(handle, segment);
  return segment;
}

void OpenedSegments::close(int device, const IpcMemHandle& handle, void* base) {
  std::lock_guard lock(mutex_);
  try {
    lazy_backend().ipc_close_mem_handle(device, base);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: closing an IPC memory handle failed: %s\n", e.what());
  }
  // The entry is this mapping's: no other open of the handle can have replaced it (open
  // waits while it is here).
  opened_.erase(handle);
  closed_.notify_all();
}

std::size_t OpenedSegments::open_count() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [handle, segment] : opened_) count += segment.expired() ? 0 : 1;
  return count;
}

}  // namespace cudascope::cuda::detail::ipc
