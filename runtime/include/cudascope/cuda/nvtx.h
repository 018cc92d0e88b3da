#pragma once
// NVTX: torch.cuda.nvtx. The calls go to real NVTX (so Nsight and CUPTI see them), and the
// runtime tracks each thread's range stack itself, whether or not a tool is attached.

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

namespace cudascope::cuda::nvtx {

void mark(const char* message);
// Starts a nested range; returns the zero-based depth of the range started.
int range_push(const char* message);
// Ends the innermost range; returns the depth of the range ended, -1 when none was open.
int range_pop();
// This thread's open ranges, outermost first.
const std::vector<std::string>& range_stack() noexcept;

namespace detail {
// Set for good when a thread first pushes a range (range_push).
extern std::atomic<bool> ranges_pushed;
}  // namespace detail
// False until some thread has pushed a range: till then no thread has one open, so the
// allocator's history need not ask for this thread's stack (one relaxed load, no TLS access).
// A thread that has ranges open set it itself, earlier in its own order, so it reads true.
inline bool ranges_ever_pushed() noexcept { return detail::ranges_pushed.load(std::memory_order_relaxed); }

// A range for the guard's scope.
class Range {
 public:
  explicit Range(const char* message) noexcept;
  explicit Range(const std::string& message) noexcept : Range(message.c_str()) {}
  ~Range() noexcept;
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
  Range(Range&&) = delete;
  Range& operator=(Range&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
};

}  // namespace cudascope::cuda::nvtx
