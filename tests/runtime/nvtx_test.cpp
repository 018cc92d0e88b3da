#include "test_support.h"

#include <cudascope/cuda/instrumentation.h>

#include <thread>

namespace nvtx = cudascope::cuda::nvtx;

TEST(NvtxTest, PushReturnsDepthOfRangeStartedAndPopDepthOfRangeEnded) {
  EXPECT_EQ(nvtx::range_push("outer"), 0);
  EXPECT_EQ(nvtx::range_push("inner"), 1);
  EXPECT_EQ(nvtx::range_stack(), (std::vector<std::string>{"outer", "inner"}));
  EXPECT_EQ(nvtx::range_pop(), 1);
  EXPECT_EQ(nvtx::range_pop(), 0);
  EXPECT_EQ(nvtx::range_pop(), -1);
  EXPECT_TRUE(nvtx::range_stack().empty());
}

TEST(NvtxTest, RangeGuardPopsAtScopeExitAndOnException) {
  try {
    nvtx::Range outer("outer");
    nvtx::Range inner(std::string("inner"));
    EXPECT_EQ(nvtx::range_stack().size(), 2u);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(nvtx::range_stack().empty());
}

TEST(NvtxTest, StacksArePerThread) {
  nvtx::Range here("main thread");
  std::size_t depth_elsewhere = 99;
  std::thread([&] {
    nvtx::Range there("worker");
    depth_elsewhere = nvtx::range_stack().size();
  }).join();
  EXPECT_EQ(depth_elsewhere, 1u);
  EXPECT_EQ(nvtx::range_stack(), (std::vector<std::string>{"main thread"}));
}

// Records the NVTX events the runtime reports to its observer (the profiler's entry point).
struct NvtxRecorder : cudascope::cuda::instrumentation::Observer {
  std::vector<std::pair<cudascope::cuda::instrumentation::NvtxEvent::Type, std::string>> events;
  void on_allocator_event(const cudascope::cuda::instrumentation::AllocatorEvent&) override {}
  void on_nvtx(const cudascope::cuda::instrumentation::NvtxEvent& e) override {
    events.emplace_back(e.type, e.message ? e.message : "");
  }
};

TEST(NvtxTest, MarkIsReportedWithItsTextAndLeavesTheStackAlone) {
  using Type = cudascope::cuda::instrumentation::NvtxEvent::Type;
  NvtxRecorder recorder;
  cudascope::cuda::instrumentation::set_observer(&recorder);
  nvtx::range_push("outer");
  nvtx::mark("checkpoint");
  nvtx::range_pop();
  cudascope::cuda::instrumentation::set_observer(nullptr);
  using Events = decltype(recorder.events);
  EXPECT_EQ(recorder.events, (Events{{Type::kPush, "outer"}, {Type::kMark, "checkpoint"}, {Type::kPop, ""}}))
      << "a mark reaches the observer between the push and the pop, with its text";
  EXPECT_TRUE(nvtx::range_stack().empty());
}
