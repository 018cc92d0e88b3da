#pragma once
// The consumer's side of shared memory: other processes' segments opened here, once per
// handle while anything uses them, as torch's getIpcDevPtr (a handle -> weak pointer cache;
// the last holder's release closes the handle). Thread-safety: thread-safe.

#include <cudascope/cuda/ipc.h>

#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace cudascope::cuda::detail::ipc {

class OpenedSegments {
 public:
  // The segment's base in this process, mapped on `device`; the same pointer for the same
  // handle while a previous result is alive. A handle whose last holder has just let go is
  // opened again only once its close has finished: one mapping per handle at a time.
  std::shared_ptr<void> open(int device, const IpcMemHandle& handle);
  std::size_t open_count() const;

 private:
  void close(int device, const IpcMemHandle& handle, void* base);

  mutable std::mutex mutex_;
  std::condition_variable closed_;
  // An entry lives from the open until the close has finished (not merely until the last
  // holder let go, when the weak pointer expires but the handle is still mapped).
  std::map<IpcMemHandle, std::weak_ptr<void>> opened_;
};

}  // namespace cudascope::cuda::detail::ipc
