#include "test_support.h"

#include <chrono>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;

TEST(TelemetryTest, SimUtilizationFollowsBusyStreams) {
  if (cuda::backend_name() != "sim") GTEST_SKIP() << "the sim device's model; backend is " << cuda::backend_name();
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

TEST(TelemetryTest, TorchNamedFunctionsReportTheSameFigures) {
  if (cuda::backend_name() != "sim") GTEST_SKIP() << "the sim device's model; backend is " << cuda::backend_name();
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

TEST(TelemetryTest, ListGpuProcessesFollowsTorchsFormat) {
  const std::string listing = cuda::list_gpu_processes(0);
  EXPECT_EQ(listing.rfind("GPU:0\n", 0), 0u) << listing;
  const auto processes = cuda::gpu_processes(0);
  if (processes.empty()) {
    EXPECT_THAT(listing, ::testing::HasSubstr("no processes are running"));
  } else {
    EXPECT_THAT(listing, ::testing::HasSubstr("MB GPU memory"));
  }
}
