#pragma once
// PyTorch's DeviceThreadHandlePool: handles created on demand, one per thread and device,
// given back to the pool when the thread exits and reused by later threads; never more than
// the most threads that held one at once, and never capped (a cap could deadlock threads
// that synchronise with each other while holding handles). Thread-safety: thread-safe.

#include <cstddef>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::detail::blas {

class HandlePool {
 public:
  using Create = std::function<void*(int device)>;
  explicit HandlePool(Create create) : create_(std::move(create)) {}
  HandlePool(const HandlePool&) = delete;
  HandlePool& operator=(const HandlePool&) = delete;

  // The calling thread's handle for `device`: its own, else one an exited thread gave back,
  // else a new one.
  void* reserve(int device);

  std::size_t created(int device) const;
  std::size_t available(int device) const;

 private:
  class Window;
  void give_back(const std::unordered_map<int, void*>& handles);

  Create create_;
  mutable std::mutex mutex_;
  std::unordered_map<int, std::vector<void*>> created_;
  std::unordered_map<int, std::vector<void*>> available_;
};

}  // namespace cudascope::cuda::detail::blas
