#pragma once
// The NVTX side of the library (nvtx_bridge.cpp): the handlers NVTX_INJECTION64_PATH installs,
// and the ranges an allocation borrows when its thread has none open.
//
// PyTorch runs the backward pass on its autograd thread, which opens no NVTX range: the
// training loop's ranges ("step 12", "backward") are open on the main thread, blocked in
// loss.backward() meanwhile. While history is recorded, an allocation or free on a thread
// with no range open carries the ranges open on the thread that last opened or closed one,
// so the backward pass's blocks are annotated with the phase that caused them. Threads with
// ranges of their own keep them.

#include <cudascope/cuda/nvtx.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::torch_allocator {

// On while the allocator records history (cudascope_torch_record_memory_history).
void set_borrowing(bool on) noexcept;
// At the allocator's start (cudascope_torch_init): on where the runtime records history from
// its first use (CUDASCOPE_OOM_SNAPSHOT, memory.h), unless set_borrowing came first.
void start_borrowing_with_default_history() noexcept;

namespace detail {
extern std::atomic<bool> borrowing;
// The ranges open on the thread that last pushed or popped one through the handlers; null
// when none.
std::shared_ptr<const std::vector<std::string>> ranges_of_last_thread();
}  // namespace detail

// Runs body() with this thread's range stack borrowed from the last thread's when this
// thread has none and borrowing is on; otherwise runs it as is. One relaxed load when off.
template <typename Body>
auto with_borrowed_ranges(Body body) -> decltype(body()) {
  if (!detail::borrowing.load(std::memory_order_relaxed) || !cuda::nvtx::range_stack().empty()) [[likely]] {
    return body();
  }
  const auto ranges = detail::ranges_of_last_thread();
  if (ranges == nullptr || ranges->empty()) return body();
  struct Lent {
    std::size_t depth = 0;
    ~Lent() {
      for (; depth > 0; --depth) cuda::nvtx::range_pop();
    }
  } lent;
  for (const std::string& range : *ranges) {
    cuda::nvtx::range_push(range.c_str());
    ++lent.depth;
  }
  return body();
}

}  // namespace cudascope::torch_allocator
