// The simulated device's own model (device count and capacity, telemetry). Registered with
// CUDASCOPE_BACKEND=sim, so these run on every machine, GPU machines included.
#include "test_support.h"

#include <chrono>
#include <cstdlib>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;

TEST(SimBackendTest, HasTheConfiguredDevicesAndCapacity) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  const char* configured = std::getenv("CUDASCOPE_SIM_DEVICES");
  EXPECT_EQ(cuda::device_count(), configured ? std::atoi(configured) : 2);
  EXPECT_EQ(cuda::get_device_properties(0).total_memory, 16ULL << 30);
  EXPECT_EQ(cuda::get_device_name(0), "cudascope sim device");
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
