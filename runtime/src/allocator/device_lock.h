#pragma once
// The device lock of a DeviceAllocator: a mutex whose uncontended lock and unlock are one
// atomic instruction each, inline (std::mutex calls into pthread, which dispatches on the
// mutex type first). Contended, it spins briefly, then sleeps (std::atomic::wait, a futex
// on Linux). States as in "Futexes Are Tricky" (mutex 3): 0 free, 1 held, 2 held with
// possible sleepers. Meets Lockable; not recursive.

#include <atomic>

namespace cudascope::cuda::detail::alloc {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class DeviceLock {
 public:
  DeviceLock() = default;
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  void lock() noexcept {
    int expected = 0;
    if (!state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
        [[unlikely]] {
      lock_contended();
    }
  }
  bool try_lock() noexcept {
    int expected = 0;
    return state_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void unlock() noexcept {
    if (state_.exchange(0, std::memory_order_release) == 2) [[unlikely]] state_.notify_one();
  }

 private:
  void lock_contended() noexcept {
    // A critical section is a few hundred instructions: a short spin usually outlasts it.
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      int expected = 0;
      if (state_.load(std::memory_order_relaxed) == 0 &&
          state_.compare_exchange_weak(expected, 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
    }
    while (state_.exchange(2, std::memory_order_acquire) != 0) state_.wait(2, std::memory_order_relaxed);
  }

  std::atomic<int> state_{0};
};

}  // namespace cudascope::cuda::detail::alloc
