#include "handle_pool.h"

#include <memory>

namespace cudascope::cuda::detail::blas {

// A thread's handles (torch's PoolWindow): looked up without a lock; returned on thread exit.
class HandlePool::Window {
 public:
  explicit Window(HandlePool& pool) : pool_(pool) {}
  ~Window() { pool_.give_back(mine_); }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  void* find(int device) const {
    const auto found = mine_.find(device);
    return found == mine_.end() ? nullptr : found->second;
  }
  void keep(int device, void* handle) { mine_[device] = handle; }

 private:
  HandlePool& pool_;
  std::unordered_map<int, void*> mine_;
};

void* HandlePool::reserve(int device) {
  // One window per thread and pool; pools live for the whole process.
  thread_local std::unordered_map<HandlePool*, std::unique_ptr<Window>> windows;
  auto& window = windows[this];
  if (!window) window = std::make_unique<Window>(*this);
  if (void* mine = window->find(device)) return mine;
  void* handle = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto& available = available_[device];
    if (!available.empty()) {
      handle = available.back();
      available.pop_back();
    }
  }
  if (handle == nullptr) {
    handle = create_(device);  // outside the lock: creating a cuBLAS handle takes milliseconds
    std::lock_guard lock(mutex_);
    created_[device].push_back(handle);
  }
  window->keep(device, handle);
  return handle;
}

void HandlePool::give_back(const std::unordered_map<int, void*>& handles) {
  std::lock_guard lock(mutex_);
  for (const auto& [device, handle] : handles) available_[device].push_back(handle);
}

std::size_t HandlePool::created(int device) const {
  std::lock_guard lock(mutex_);
  const auto found = created_.find(device);
  return found == created_.end() ? 0 : found->second.size();
}

std::size_t HandlePool::available(int device) const {
  std::lock_guard lock(mutex_);
  const auto found = available_.find(device);
  return found == available_.end() ? 0 : found->second.size();
}

}  // namespace cudascope::cuda::detail::blas
