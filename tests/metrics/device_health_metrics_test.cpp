// Device health figures beyond torch.cuda's (dcgm-exporter's default set and Hopper's GPM):
// the exporter's formatting of cuda::DeviceTelemetry (units, labels, bounds, absent when
// empty), and `serve`'s background sampling. NVML gives these only on a GPU; the GPU check
// (bench/metrics/run_gpu_metrics_check.sh) shows what a device reports.
#include "metrics_text.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/telemetry.h>
#include <cudascope/metrics/metrics.h>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace cuda = cudascope::cuda;
namespace metrics = cudascope::metrics;
using cudascope::testing::find_sample;
using cudascope::testing::parse_exposition;
using namespace std::chrono_literals;

namespace {

// Every figure present, with values whose scaled forms are distinct.
cuda::DeviceTelemetry every_figure() {
  cuda::DeviceTelemetry t;
  t.utilization_percent = 40;
  t.memory_utilization_percent = 20;
  t.temperature_celsius = 55;
  t.power_milliwatts = 350'000;
  t.sm_clock_mhz = 1980;
  t.energy_millijoules = 7'000'000;
  t.memory_used_bytes = 10ull << 30;
  t.memory_total_bytes = 80ull << 30;
  t.processes = {{4242, 1ull << 30}};
  t.memory_temperature_celsius = 48;
  t.memory_reserved_bytes = 512ull << 20;
  t.nvlink_tx_bytes = 3ull << 40;
  t.nvlink_rx_bytes = 5ull << 40;
  cuda::DeviceTelemetry::XidErrors xids;
  xids.by_code = {{79, 2}, {48, 1}};
  xids.other = 3;
  xids.last = 79;
  t.xid_errors = xids;
  t.process_utilization = std::vector<cuda::DeviceTelemetry::ProcessUtilization>{{4242, 87, 30}, {77, 5, 1}};
  t.gpm_sm_active_percent = 91.5;
  t.gpm_sm_occupancy_percent = 42.25;
  t.gpm_tensor_active_percent = 63.0;
  t.gpm_dram_bandwidth_percent = 12.5;
  return t;
}

const char* const kNewFigures[] = {
    "cudascope_gpu_memory_temperature_celsius", "cudascope_gpu_memory_reserved_bytes",
    "cudascope_gpu_nvlink_bytes_total",         "cudascope_gpu_last_xid",
    "cudascope_gpu_xid_errors_total",           "cudascope_gpu_process_utilization_ratio",
    "cudascope_gpu_sm_active_ratio",            "cudascope_gpu_sm_occupancy_ratio",
    "cudascope_gpu_tensor_active_ratio",        "cudascope_gpu_dram_active_ratio",
};

}  // namespace

TEST(DeviceHealthFormatTest, NewFiguresInBaseUnits) {
  const auto samples = parse_exposition(metrics::render_device_health(every_figure(), 3));
  const std::map<std::string, std::string> device{{"device", "3"}};
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_temperature_celsius", device), 48.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_reserved_bytes", device), 512.0 * (1 << 20));
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_nvlink_bytes_total", {{"device", "3"}, {"direction", "tx"}}),
            3.0 * (1ull << 40));
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_nvlink_bytes_total", {{"device", "3"}, {"direction", "rx"}}),
            5.0 * (1ull << 40));
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_sm_active_ratio", device), 0.915);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_sm_occupancy_ratio", device), 0.4225);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_tensor_active_ratio", device), 0.63);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_dram_active_ratio", device), 0.125);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_process_utilization_ratio", {{"pid", "4242"}}), 0.87);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_process_utilization_ratio", {{"pid", "77"}}), 0.05);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_gpu_power_watts", device), 350.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_free_bytes", device), 70.0 * (1ull << 30));
}

TEST(DeviceHealthFormatTest, XidErrorsCountedByCodeWithTheLastCode) {
  const auto samples = parse_exposition(metrics::render_device_health(every_figure(), 0));
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_last_xid", {{"device", "0"}}), 79.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_xid_errors_total", {{"xid", "79"}}), 2.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_xid_errors_total", {{"xid", "48"}}), 1.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_xid_errors_total", {{"xid", "other"}}), 3.0);
  std::size_t series = 0;
  for (const auto& sample : samples) series += sample.name == "cudascope_gpu_xid_errors_total";
  EXPECT_EQ(series, 3u);

  // Supported but none seen: the last code reads 0 and no code has a series.
  cuda::DeviceTelemetry quiet = every_figure();
  quiet.xid_errors = cuda::DeviceTelemetry::XidErrors{};
  const auto none = parse_exposition(metrics::render_device_health(quiet, 0));
  EXPECT_EQ(find_sample(none, "cudascope_gpu_last_xid", {{"device", "0"}}), 0.0);
  EXPECT_FALSE(find_sample(none, "cudascope_gpu_xid_errors_total", {}).has_value());
}

TEST(DeviceHealthFormatTest, FiguresNvmlLeftOutAreAbsentNotZero) {
  cuda::DeviceTelemetry basic;  // what a driver without any of the newer entry points gives
  basic.utilization_percent = 10;
  basic.memory_total_bytes = 1 << 30;
  const auto samples = parse_exposition(metrics::render_device_health(basic, 0));
  for (const char* name : kNewFigures) {
    EXPECT_FALSE(find_sample(samples, name, {}).has_value()) << name << " must be absent, not 0";
  }
  EXPECT_TRUE(find_sample(samples, "cudascope_gpu_utilization_ratio", {}).has_value());
  // Each GPM figure on its own: a metric NVML could not compute leaves only that one out.
  cuda::DeviceTelemetry partial = every_figure();
  partial.gpm_tensor_active_percent.reset();
  partial.nvlink_rx_bytes.reset();
  const auto some = parse_exposition(metrics::render_device_health(partial, 0));
  EXPECT_FALSE(find_sample(some, "cudascope_gpu_tensor_active_ratio", {}).has_value());
  EXPECT_TRUE(find_sample(some, "cudascope_gpu_sm_active_ratio", {}).has_value());
  EXPECT_FALSE(find_sample(some, "cudascope_gpu_nvlink_bytes_total", {{"direction", "rx"}}).has_value());
  EXPECT_TRUE(find_sample(some, "cudascope_gpu_nvlink_bytes_total", {{"direction", "tx"}}).has_value());
  // Supported with no process sampled: no series, not a 0 for anyone.
  cuda::DeviceTelemetry idle = every_figure();
  idle.process_utilization.emplace();
  EXPECT_FALSE(find_sample(parse_exposition(metrics::render_device_health(idle, 0)),
                           "cudascope_gpu_process_utilization_ratio", {})
                   .has_value());
}

TEST(DeviceHealthFormatTest, LocalDeviceShowsWhatItsTelemetryHas) {
  metrics::MetricsOptions options;
  options.allocator = false;
  const auto samples = parse_exposition(metrics::render_metrics(options));
  const cuda::DeviceTelemetry t = cuda::device_telemetry(0);
  const std::map<std::string, std::string> device{{"device", "0"}};
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_temperature_celsius", device).has_value(),
            t.memory_temperature_celsius.has_value());
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_reserved_bytes", device).has_value(),
            t.memory_reserved_bytes.has_value());
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_last_xid", device).has_value(), t.xid_errors.has_value());
  if (cuda::backend_name() == "sim") {
    EXPECT_FALSE(t.gpm_sm_active_percent.has_value()) << "the sim models no GPM";
    EXPECT_FALSE(find_sample(samples, "cudascope_gpu_sm_active_ratio", device).has_value());
  }
}

// `serve` reads device health on a thread: a scrape shows the latest reading, not a new one.
TEST(HealthSamplerTest, ScrapesShowTheLatestReadingWithoutReadingAgain) {
  metrics::MetricsOptions options;
  options.allocator = false;
  options.health_interval = 1h;  // one reading, at start
  metrics::MetricsServer server("127.0.0.1:0", options);
  const auto first = cudascope::testing::http_get(server.port(), "/metrics");
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(find_sample(parse_exposition(*first), "cudascope_gpu_utilization_ratio", {{"device", "0"}}).has_value());
  cuda::busy_wait(50ms);  // the sim's utilization moves with work done between readings
  cuda::synchronize();
  const auto second = cudascope::testing::http_get(server.port(), "/metrics");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*first, *second) << "a scrape within the interval must not read the device again";
}

TEST(HealthSamplerTest, ReadingsFollowTheDeviceAtTheInterval) {
  metrics::MetricsOptions options;
  options.allocator = false;
  options.health_interval = 20ms;
  metrics::MetricsServer server("127.0.0.1:0", options);
  // The energy counter grows with every reading (the sim's device draws power when idle).
  const auto energy = [&] {
    const auto body = cudascope::testing::http_get(server.port(), "/metrics");
    return body ? find_sample(parse_exposition(*body), "cudascope_gpu_energy_joules_total", {{"device", "0"}})
                : std::nullopt;
  };
  const auto before = energy();
  ASSERT_TRUE(before.has_value());
  std::optional<double> after = before;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (after == before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    after = energy();
  }
  ASSERT_TRUE(after.has_value());
  EXPECT_GT(*after, *before) << "the sampler never read the device again";
}
