#include "test_support.h"

#include <chrono>
#include <cstdio>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(EventTest, UnrecordedEventIsCompleteAndNotCreated) {
  cuda::Event event;
  EXPECT_FALSE(event.is_created());
  EXPECT_TRUE(event.query());
  EXPECT_NO_THROW(event.synchronize());
}

TEST(EventTest, QueryFollowsRecordedWork) {
  cuda::Stream stream;
  cuda::busy_wait(200ms, stream);
  cuda::Event event;
  event.record(stream);
  EXPECT_TRUE(event.is_created());
  EXPECT_EQ(event.device_index(), stream.device_index());
  EXPECT_FALSE(event.query());
  event.synchronize();
  EXPECT_TRUE(event.query());
}

TEST(EventTest, ElapsedTimeOfAKernelOfKnownLength) {
  cuda::Stream stream;
  cuda::Event start(true), end(true);
  start.record(stream);
  cuda::busy_wait(50ms, stream);
  end.record(stream);
  end.synchronize();
  const float ms = start.elapsed_time(end);
  EXPECT_GE(ms, 49.0f);
  EXPECT_LT(ms, 80.0f);
}

TEST(EventTest, ElapsedTimeNeedsTimingEvents) {
  cuda::Event start(false), end(false);
  start.record();
  end.record();
  end.synchronize();
  EXPECT_THROW(start.elapsed_time(end), cuda::Error);
  cuda::Event never_recorded(true);
  EXPECT_THROW(never_recorded.elapsed_time(never_recorded), cuda::Error);
}

TEST(EventTest, WaitMakesAnotherStreamWait) {
  cuda::Stream first, second;
  cuda::busy_wait(250ms, first);
  cuda::Event event = first.record_event();
  event.wait(second);
  cuda::Event after;
  after.record(second);
  const auto start = Clock::now();
  after.synchronize();
  EXPECT_GE(Clock::now() - start, 150ms);
}

TEST(EventTest, RecordingOnAnotherDeviceIsAnError) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::Event event;
  event.record(cuda::Stream(0));
  EXPECT_THROW(event.record(cuda::Stream(1)), cuda::Error);
}

TEST(EventTest, IpcHandleNeedsAnInterprocessEvent) {
  cuda::Event plain;
  EXPECT_THROW(plain.ipc_handle(), cuda::Error);
}

namespace {
cuda::IpcEventHandle parse_handle(const char* hex) {
  cuda::IpcEventHandle handle{};
  for (std::size_t i = 0; i < handle.size(); ++i) {
    unsigned byte = 0;
    std::sscanf(hex + 2 * i, "%2x", &byte);
    handle[i] = static_cast<std::uint8_t>(byte);
  }
  return handle;
}

// Child: opens the parent's event, reports whether it was still pending, waits for it.
int ipc_event_child(int argc, char** argv) {
  if (argc < 3) return 10;
  cuda::Event event = cuda::Event::from_ipc_handle(parse_handle(argv[2]), 0);
  const bool pending_at_open = !event.query();
  event.synchronize();
  std::printf("pending_at_open=%d done=%d\n", pending_at_open ? 1 : 0, event.query() ? 1 : 0);
  return 0;
}
const cudascope::testing::ChildModeRegistrar ipc_child_mode{"--ipc-event-child", &ipc_event_child};
}  // namespace

TEST(EventIpcTest, AnotherProcessWaitsForTheSharedEvent) {
  cuda::Stream stream;
  cuda::Event event(false, false, true);
  // Long enough that the child starts (and initialises CUDA) while the kernel still runs.
  cuda::busy_wait(3s, stream);
  event.record(stream);
  const cuda::IpcEventHandle handle = event.ipc_handle();
  std::string hex;
  for (std::uint8_t byte : handle) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    hex += two;
  }
  const auto child = cudascope::testing::run_self({"--ipc-event-child", hex});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("pending_at_open=1 done=1"));
  // The child returned only after the kernel finished: the parent sees the event done too.
  // (Not stream.query(): the sim's stream counts as idle only just after its last operation,
  // this event record, has completed the event, so it may still be busy for an instant.)
  EXPECT_TRUE(event.query()) << "the child did not wait for the parent's event";
}
