#pragma once
// Within the runtime: whether any thread has pushed an NVTX range yet (nvtx.cpp).

#include <atomic>

namespace cudascope::cuda::nvtx::detail {

// Set for good when a thread first pushes a range (range_push).
extern std::atomic<bool> ranges_pushed;

// False until some thread has pushed a range: till then no thread has one open, so the
// allocator's history need not ask for this thread's stack (one relaxed load, no TLS access).
// A thread that has ranges open set it itself, earlier in its own order, so it reads true.
inline bool ranges_ever_pushed() noexcept { return ranges_pushed.load(std::memory_order_relaxed); }

}  // namespace cudascope::cuda::nvtx::detail
