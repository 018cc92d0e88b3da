#pragma once
// NVTX: torch.cuda.nvtx. The calls go to real NVTX (so Nsight and CUPTI see them), and the
// runtime tracks each thread's range stack itself, whether or not a tool is attached.

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
