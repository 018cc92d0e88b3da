// NVTX ranges: real NVTX calls plus a per-thread range stack the runtime keeps itself.
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/nvtx.h>

#include "nvtx_ranges.h"

#include <nvtx3/nvToolsExt.h>

namespace cudascope::cuda::nvtx {
namespace detail {
std::atomic<bool> ranges_pushed{false};
}  // namespace detail
namespace {
// Frees (and so the allocator's history, which reads this stack) can run after a thread's
// thread_locals are destroyed: from later thread_local destructors and, on the main thread,
// from static destructors at exit. So the stack is reached through a pointer in a trivially
// destructible, constant-initialised thread_local: it stays readable then, and reading it is
// one TLS access with no initialisation guard (range_stack() runs on every allocator
// operation while the history is on). The stack itself is made at the thread's first push,
// with an owner whose destruction frees it and marks the thread as having none from then on.
struct ThreadRanges {
  std::vector<std::string>* stack;
  bool destroyed;
};
thread_local ThreadRanges thread_ranges{nullptr, false};
struct RangesOwner {
  ~RangesOwner() {
    delete thread_ranges.stack;
    thread_ranges = {nullptr, true};
  }
};
// Read where a thread has no stack; never destroyed itself.
const std::vector<std::string>& no_ranges() noexcept {
  static const auto* const none = new std::vector<std::string>();
  return *none;
}
// The thread's stack, made at its first use; null once the thread's thread_locals are gone.
std::vector<std::string>* own_stack() {
  ThreadRanges& t = thread_ranges;
  if (t.stack != nullptr || t.destroyed) return t.stack;
  thread_local RangesOwner owner;  // registered now, destroyed with the thread's other thread_locals
  t.stack = new std::vector<std::string>();
  detail::ranges_pushed.store(true, std::memory_order_relaxed);
  return t.stack;
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
  std::vector<std::string>* stack = own_stack();
  if (stack == nullptr) [[unlikely]] return 0;
  stack->emplace_back(message);
  return static_cast<int>(stack->size()) - 1;
}

int range_pop() {
  std::vector<std::string>* stack = thread_ranges.stack;
  if (stack == nullptr || stack->empty()) return -1;
  nvtxRangePop();
  report(instrumentation::NvtxEvent::Type::kPop, nullptr);
  stack->pop_back();
  return static_cast<int>(stack->size());
}

const std::vector<std::string>& range_stack() noexcept {
  const std::vector<std::string>* stack = thread_ranges.stack;
  return stack != nullptr ? *stack : no_ranges();
}

Range::Range(const char* message) noexcept {
  try {
    range_push(message);
  } catch (...) {
  }
}

Range::~Range() noexcept { range_pop(); }

}  // namespace cudascope::cuda::nvtx
