// The simulated device's own model (device count and capacity, stream numbering, telemetry).
// Registered with CUDASCOPE_BACKEND=sim, so these run on every machine, GPU machines included.
#include "test_support.h"

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <set>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;

TEST(SimBackendTest, HasTheConfiguredDevicesAndCapacity) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  const char* configured = std::getenv("CUDASCOPE_SIM_DEVICES");
  EXPECT_EQ(cuda::device_count(), configured ? std::atoi(configured) : 2);
  EXPECT_EQ(cuda::get_device_properties(0).total_memory, 16ULL << 30);
  EXPECT_EQ(cuda::get_device_name(0), "cudascope sim device");
}

TEST(SimBackendTest, TheStreamPoolIsCreatedWholeSlotBySlot) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();  // the sim numbers streams as it creates them; the driver's ids are its own
  // torch creates each slot's stream of every level in turn, all at the first Stream(): the
  // ids of one level's streams then step by the number of levels.
  const auto [least, greatest] = cuda::Stream::priority_range();
  const std::int64_t levels = std::min(least - greatest + 1, 4);
  std::set<std::int64_t> ids;
  for (int i = 0; i < 32; ++i) ids.insert(cuda::Stream(0, 0).id());
  ASSERT_EQ(ids.size(), 32u);
  EXPECT_EQ(*ids.rbegin() - *ids.begin(), 31 * levels);
  std::set<std::int64_t> next_level;
  for (int i = 0; i < 32; ++i) next_level.insert(cuda::Stream(0, least - 1).id());
  EXPECT_EQ(*next_level.begin(), *ids.begin() + 1);
}

// On the device a stream whose last operation is an event record is idle once the event is:
// whoever waited for the event finds the stream done.
TEST(SimBackendTest, AStreamIsIdleOnceItsLastEventHasCompleted) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  cuda::Stream producer;
  for (int i = 0; i < 10000; ++i) {
    cuda::busy_wait(std::chrono::microseconds(i % 5), producer);
    cuda::Event done;
    done.record(producer);
    done.synchronize();
    ASSERT_TRUE(producer.query()) << "round " << i;
  }
}

TEST(SimBackendTest, UtilizationFollowsBusyStreams) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  cuda::Stream stream;
  cuda::device_telemetry(0);  // starts a sample period
  std::this_thread::sleep_for(100ms);
  const cuda::DeviceTelemetry idle = cuda::device_telemetry(0);
  cuda::busy_wait(300ms, stream);
  stream.synchronize();
  const cuda::DeviceTelemetry busy = cuda::device_telemetry(0);
  ASSERT_TRUE(idle.utilization_percent && busy.utilization_percent);
  EXPECT_LE(*idle.utilization_percent, 10);
  EXPECT_GE(*busy.utilization_percent, 80);
  EXPECT_GT(*busy.power_milliwatts, *idle.power_milliwatts);
  EXPECT_GT(*busy.temperature_celsius, *idle.temperature_celsius);
  EXPECT_GT(*busy.energy_millijoules, *idle.energy_millijoules);
  EXPECT_EQ(busy.memory_total_bytes, cuda::mem_get_info(0).second);
}

TEST(SimBackendTest, TorchNamedHealthFunctionsReportTheModelsFigures) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  EXPECT_EQ(cuda::clock_rate(0), 1980);
  const int temperature = cuda::temperature(0);
  EXPECT_GE(temperature, 30);
  EXPECT_LE(temperature, 80);
  EXPECT_GE(cuda::power_draw(0), 70000);
  try {
    cuda::memory_usage(0);
    FAIL() << "the sim device does not model memory bandwidth";
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kNotSupported);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("memory_usage"));
  }
}
