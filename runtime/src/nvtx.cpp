// NVTX ranges: real NVTX calls plus a per-thread range stack the runtime keeps itself.
#include <cudascope/cuda/nvtx.h>

#include <nvtx3/nvToolsExt.h>

namespace cudascope::cuda::nvtx {
namespace {
thread_local std::vector<std::string> open_ranges;
}

void mark(const char* message) { nvtxMarkA(message); }

int range_push(const char* message) {
  nvtxRangePushA(message);
  open_ranges.emplace_back(message);
  return static_cast<int>(open_ranges.size()) - 1;
}

int range_pop() {
  if (open_ranges.empty()) return -1;
  nvtxRangePop();
  open_ranges.pop_back();
  return static_cast<int>(open_ranges.size());
}

const std::vector<std::string>& range_stack() noexcept { return open_ranges; }

Range::Range(const char* message) noexcept {
  try {
    range_push(message);
  } catch (...) {
  }
}

Range::~Range() noexcept { range_pop(); }

}  // namespace cudascope::cuda::nvtx
