#include "test_support.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(StreamTest, CurrentStreamDefaultsToDefaultStream) {
  EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
  EXPECT_EQ(cuda::default_stream().handle(), nullptr);
  EXPECT_EQ(cuda::default_stream().id(), 0);
}

TEST(StreamTest, NewStreamIsDistinctFromDefault) {
  cuda::Stream stream;
  EXPECT_NE(stream, cuda::default_stream());
  EXPECT_NE(stream.handle(), nullptr);
  EXPECT_NE(stream.id(), 0);
  EXPECT_EQ(stream.device_index(), 0);
  EXPECT_TRUE(stream.query());
}

TEST(StreamTest, PriorityIsClampedToRangeAndToFourLevels) {
  const auto [least, greatest] = cuda::Stream::priority_range();
  EXPECT_LE(greatest, least);
  // As torch.cuda.Stream: at most four levels (Hopper's range has six priorities).
  const int last_level = std::max(greatest, least - 3);
  EXPECT_EQ(cuda::Stream(0, greatest - 100).priority(), last_level);
  EXPECT_EQ(cuda::Stream(0, greatest).priority(), last_level);
  EXPECT_EQ(cuda::Stream(0, least + 100).priority(), least);
  EXPECT_EQ(cuda::Stream(0, least - 1).priority(), std::max(greatest, least - 1));
}

TEST(StreamTest, PoolHandsOutAtMost32StreamsPerPriority) {
  std::set<void*> handles;
  for (int i = 0; i < 100; ++i) handles.insert(cuda::Stream(0, 0).handle());
  EXPECT_EQ(handles.size(), 32u);
}

TEST(StreamTest, QueryIsFalseWhileWorkRuns) {
  cuda::Stream stream;
  cuda::busy_wait(300ms, stream);
  EXPECT_FALSE(stream.query());
  stream.synchronize();
  EXPECT_TRUE(stream.query());
}

TEST(StreamTest, TwoStreamsOverlapAndSynchronise) {
  cuda::Stream a, b;
  ASSERT_NE(a, b);
  const auto start = Clock::now();
  cuda::busy_wait(200ms, a);
  cuda::busy_wait(200ms, b);
  EXPECT_FALSE(a.query());
  EXPECT_FALSE(b.query());
  a.synchronize();
  b.synchronize();
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, 195ms);
  EXPECT_LT(elapsed, 380ms) << "the two 200 ms kernels ran one after the other";
  EXPECT_TRUE(a.query() && b.query());
}

TEST(StreamTest, WaitStreamOrdersWork) {
  cuda::Stream producer, consumer;
  cuda::busy_wait(250ms, producer);
  cuda::Event produced;
  produced.record(producer);
  consumer.wait_stream(producer);
  cuda::Event done;
  done.record(consumer);
  const auto start = Clock::now();
  done.synchronize();
  EXPECT_GE(Clock::now() - start, 150ms) << "the consumer did not wait for the producer";
  // The producer's work, not its stream: the sim counts a stream idle only just after its
  // last operation has completed the event the consumer waited on (stream.query() could
  // still be false here; failed once under ctest -j2).
  EXPECT_TRUE(produced.query());
}

TEST(StreamGuardTest, SwitchesStreamAndRestores) {
  cuda::Stream stream;
  {
    cuda::StreamGuard guard(stream);
    EXPECT_EQ(cuda::current_stream(), stream);
  }
  EXPECT_EQ(cuda::current_stream(), cuda::default_stream());
}

TEST(StreamGuardTest, SwitchesDeviceToTheStreamsAndRestoresBothOnException) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::Stream on_one(1);
  cuda::Stream on_zero(0);
  cuda::set_stream(on_zero);
  try {
    cuda::StreamGuard guard(on_one);
    EXPECT_EQ(cuda::current_device(), 1);
    EXPECT_EQ(cuda::current_stream(), on_one);
    EXPECT_EQ(cuda::current_stream(0), on_zero);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EQ(cuda::current_stream(0), on_zero);
  EXPECT_EQ(cuda::current_stream(1), cuda::default_stream(1));
  cuda::set_stream(cuda::default_stream(0));
}

TEST(StreamTest, SetStreamMakesTheStreamsDeviceCurrent) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  ASSERT_EQ(cuda::current_device(), 0);
  cuda::Stream on_one(1);
  cuda::set_stream(on_one);
  EXPECT_EQ(cuda::current_device(), 1);
  EXPECT_EQ(cuda::current_stream(), on_one);  // "the current stream" now means device 1's
  cuda::set_stream(cuda::default_stream(0));
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EQ(cuda::current_stream(1), on_one);  // each device keeps its own current stream
  cuda::set_stream(cuda::default_stream(1));
  cuda::set_device(0);
}

TEST(StreamTest, CurrentStreamIsPerThread) {
  cuda::Stream stream;
  cuda::set_stream(stream);
  cuda::Stream seen_elsewhere = stream;
  std::thread([&] { seen_elsewhere = cuda::current_stream(); }).join();
  EXPECT_EQ(seen_elsewhere, cuda::default_stream());
  EXPECT_EQ(cuda::current_stream(), stream);
  cuda::set_stream(cuda::default_stream());
}

TEST(ExternalStreamTest, WrapsAnExistingStream) {
  cuda::Stream owned;
  cuda::ExternalStream external(owned.handle(), 0);
  EXPECT_EQ(external.handle(), owned.handle());
  EXPECT_EQ(external.id(), owned.id());
  cuda::busy_wait(100ms, external);
  EXPECT_FALSE(owned.query());
  owned.synchronize();
  EXPECT_TRUE(external.query());
}
