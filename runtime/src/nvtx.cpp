// NVTX ranges: real NVTX calls plus a per-thread range stack the runtime keeps itself.
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/nvtx.h>

#include <nvtx3/nvToolsExt.h>

namespace cudascope::cuda::nvtx {
namespace {
// Frees (and so the allocator's history, which reads this stack) can run after a thread's
// thread_locals are destroyed: from later thread_local destructors and, on the main thread,
// from static destructors at exit. This flag is trivially destructible, so it stays readable
// then; once set, the thread has no range stack and none is tracked.
thread_local bool stack_destroyed = false;
struct OpenRanges {
  std::vector<std::string> stack;
  ~OpenRanges() { stack_destroyed = true; }
};
thread_local OpenRanges open_ranges;
// Read in place of the destroyed stack; never destroyed itself.
const std::vector<std::string>& no_ranges() noexcept {
  static const auto* const none = new std::vector<std::string>();
  return *none;
}

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
  if (stack_destroyed) [[unlikely]] return 0;
  open_ranges.stack.emplace_back(message);
  return static_cast<int>(open_ranges.stack.size()) - 1;
}

int range_pop() {
  if (stack_destroyed || open_ranges.stack.empty()) return -1;
  nvtxRangePop();
  report(instrumentation::NvtxEvent::Type::kPop, nullptr);
  open_ranges.stack.pop_back();
  return static_cast<int>(open_ranges.stack.size());
}

const std::vector<std::string>& range_stack() noexcept {
  return stack_destroyed ? no_ranges() : open_ranges.stack;
}

Range::Range(const char* message) noexcept {
  try {
    range_push(message);
  } catch (...) {
  }
}

Range::~Range() noexcept { range_pop(); }

}  // namespace cudascope::cuda::nvtx
