#include "test_support.h"

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

TEST(NvtxTest, MarkLeavesTheStackAlone) {
  nvtx::mark("checkpoint");
  EXPECT_TRUE(nvtx::range_stack().empty());
}
