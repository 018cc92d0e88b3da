// NVTX ranges: real NVTX calls plus a per-thread range stack the runtime keeps itself.
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/nvtx.h>

#include <nvtx3/nvToolsExt.h>

namespace cudascope::cuda::nvtx {
namespace {
thread_local std::vector<std::string> open_ranges;

// Tells the observer (the profiler on sim, where no NVTX tool may be attached).
void report(instrumentation::NvtxEvent::Type type, const char* message) {
  if (instrumentation::Observer* observer = instrumentation::observer()) {
    observer->on_nvtx({type, message, instrumentation::host_time_ns()});
  }
}
}  // namespace

void mark(const char* message) {
  nvtxMarkA(message);
  report(instrumentation::NvtxEvent::Type::kMark, message);
}

int range_push(const char* message) {
  nvtxRangePushA(message);
  report(instrumentation::NvtxEvent::Type::kPush, message);
  open_ranges.emplace_back(message);
  return static_cast<int>(open_ranges.size()) - 1;
}

int range_pop() {
  if (open_ranges.empty()) return -1;
  nvtxRangePop();
  report(instrumentation::NvtxEvent::Type::kPop, nullptr);
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
