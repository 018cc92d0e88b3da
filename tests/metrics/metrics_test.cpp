// The Prometheus exporter: figures equal the runtime's, the text passes promtool, and a
// real Prometheus server scrapes it.
#include "metrics_text.h"
#include "prometheus_server.h"
#include "test_support.h"

#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/telemetry.h>
#include <cudascope/metrics/metrics.h>
#include <cudascope/metrics/profile_metrics.h>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

extern char** environ;

namespace cuda = cudascope::cuda;
namespace metrics = cudascope::metrics;
using cudascope::testing::find_sample;
using cudascope::testing::parse_exposition;
using namespace std::chrono_literals;

namespace {

// Holds allocations for a test and gives them back.
class Allocations {
 public:
  void add(std::size_t size, int device = 0) { pointers_.push_back(cuda::caching_allocator_alloc(size, device)); }
  ~Allocations() {
    for (void* ptr : pointers_) cuda::caching_allocator_delete(ptr);
  }

 private:
  std::vector<void*> pointers_;
};

std::string temp_dir() {
  char pattern[] = "/tmp/cudascope-metrics-XXXXXX";
  return mkdtemp(pattern);
}

// The live metrics of a recording that saw one record of each kind the dashboard shows.
std::string live_metrics_text() {
  namespace profiler = cudascope::profiler;
  metrics::ProfileMetricsOptions options;
  options.label_nvtx = true;
  metrics::ProfileMetrics live(options);
  std::vector<profiler::Record> records;
  profiler::Record kernel = profiler::make_device_record(profiler::RecordKind::kKernel, 0, 1, 0, 10, 1);
  kernel.u.kernel.name = "step_kernel";
  records.push_back(kernel);
  profiler::Record copy = profiler::make_device_record(profiler::RecordKind::kMemcpy, 0, 1, 0, 10, 2);
  records.push_back(copy);
  records.push_back(profiler::make_device_record(profiler::RecordKind::kMemset, 0, 1, 0, 10, 3));
  profiler::Record sync = profiler::make_record(profiler::RecordKind::kSync);
  records.push_back(sync);
  profiler::Record push = profiler::make_record(profiler::RecordKind::kNvtxPush);
  push.thread_id = 1;
  records.push_back(push);
  profiler::Record pop = profiler::make_record(profiler::RecordKind::kNvtxPop);
  pop.thread_id = 1;
  records.push_back(pop);
  profiler::Record held = profiler::make_record(profiler::RecordKind::kAllocator);
  held.device = 0;
  records.push_back(held);
  live.consume(records.data(), records.size());
  live.flushed();
  return live.render();
}

// The live metrics of a metrics-only recording, whose records of device work are sampled: the
// estimate families, the sampling ratio, and the exact launch count as formatted when CUPTI
// gave its launch callback.
std::string sampled_live_metrics_text() {
  namespace profiler = cudascope::profiler;
  auto sampling = std::make_shared<profiler::KernelSampling>(profiler::SamplingPlan{});
  sampling->set_counting_launches(true);
  sampling->begin(0);
  sampling->open(0, sampling->plan().weight());
  metrics::ProfileMetricsOptions options;
  options.label_nvtx = true;
  options.kernel_sampling = sampling;
  metrics::ProfileMetrics live(options);
  std::vector<profiler::Record> records;
  profiler::Record kernel = profiler::make_device_record(profiler::RecordKind::kKernel, 0, 1, 10, 20, 1);
  kernel.u.kernel.name = "step_kernel";
  records.push_back(kernel);
  records.push_back(profiler::make_device_record(profiler::RecordKind::kMemcpy, 0, 1, 10, 20, 2));
  records.push_back(profiler::make_device_record(profiler::RecordKind::kMemset, 0, 1, 10, 20, 3));
  profiler::Record sync = profiler::make_record(profiler::RecordKind::kSync);
  sync.start_ns = 10;
  records.push_back(sync);
  live.consume(records.data(), records.size());
  live.flushed();
  return live.render();
}

// A device's telemetry with every figure NVML can give present.
cuda::DeviceTelemetry every_device_figure() {
  cuda::DeviceTelemetry t = cuda::device_telemetry(0);
  t.memory_temperature_celsius = 45;
  t.memory_reserved_bytes = 1 << 29;
  t.nvlink_tx_bytes = t.nvlink_rx_bytes = 1 << 20;
  t.xid_errors = cuda::DeviceTelemetry::XidErrors{{{79, 1}}, 0, 79};
  t.process_utilization = std::vector<cuda::DeviceTelemetry::ProcessUtilization>{{1, 50, 20}};
  t.gpm_sm_active_percent = t.gpm_sm_occupancy_percent = t.gpm_tensor_active_percent = t.gpm_dram_bandwidth_percent = 50;
  return t;
}

int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(MetricsTest, AllocatorFiguresEqualMemoryStats) {
  Allocations held;
  held.add(3 << 20);
  held.add(4096);
  held.add(700);
  const auto samples = parse_exposition(metrics::render_metrics());
  const auto stats = cuda::memory_stats(0);
  EXPECT_EQ(find_sample(samples, "cudascope_memory_allocated_bytes", {{"device", "0"}, {"pool", "all"}}),
            static_cast<double>(stats.at("allocated_bytes.all.current")));
  EXPECT_EQ(find_sample(samples, "cudascope_memory_allocated_bytes", {{"device", "0"}, {"pool", "small"}}),
            static_cast<double>(stats.at("allocated_bytes.small_pool.current")));
  EXPECT_EQ(find_sample(samples, "cudascope_memory_reserved_bytes", {{"device", "0"}, {"pool", "large"}}),
            static_cast<double>(stats.at("reserved_bytes.large_pool.current")));
  EXPECT_EQ(find_sample(samples, "cudascope_memory_allocations_total", {{"device", "0"}, {"pool", "all"}}),
            static_cast<double>(stats.at("allocation.all.allocated")));
  EXPECT_GE(*find_sample(samples, "cudascope_memory_allocated_bytes", {{"device", "0"}, {"pool", "all"}}),
            (3 << 20) + 4096 + 700);
  // External fragmentation as the snapshot figures define it: 1 - largest free / cached.
  const auto typed = cuda::allocator_stats(0);
  const double cached = static_cast<double>(stats.at("reserved_bytes.all.current") - stats.at("active_bytes.all.current"));
  ASSERT_GT(cached, 0) << "the 3 MiB block's segment leaves a free remainder";
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_memory_fragmentation_ratio", {{"device", "0"}}),
                   1.0 - static_cast<double>(typed.largest_free_block) / cached);
  EXPECT_EQ(find_sample(samples, "cudascope_memory_alloc_bytes_total", {{"device", "0"}, {"pool", "all"}}),
            static_cast<double>(stats.at("allocated_bytes.all.allocated")));
}

TEST(MetricsTest, FragmentationIsZeroWhenNothingIsCached) {
  // Each test runs in its own process: device 0 holds nothing once its cache is emptied.
  cuda::empty_cache();
  metrics::MetricsOptions options;
  options.devices = {0};
  const auto samples = parse_exposition(metrics::render_metrics(options));
  EXPECT_EQ(find_sample(samples, "cudascope_memory_reserved_bytes", {{"device", "0"}, {"pool", "all"}}), 0.0);
  EXPECT_EQ(find_sample(samples, "cudascope_memory_fragmentation_ratio", {{"device", "0"}}), 0.0);
}

// Under OpenMetrics a counter `x_total` is the family `x`: no gauge may be named `x`.
TEST(MetricsTest, NoCounterSharesItsBaseNameWithAGauge) {
  Allocations held;
  held.add(1 << 20);
  std::set<std::string> names;
  for (const auto& sample : parse_exposition(metrics::render_metrics())) names.insert(sample.name);
  std::size_t counters = 0;
  for (const std::string& name : names) {
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "_total") != 0) continue;
    ++counters;
    EXPECT_EQ(names.count(name.substr(0, name.size() - 6)), 0u) << name;
  }
  EXPECT_GE(counters, 8u);
}

// What a program serving CUDASCOPE_METRICS exports: its own figures, labelled with its pid,
// for the devices it used, and no device health (that is `cudascope serve`'s).
TEST(MetricsTest, ProcessModeExportsOnlyThisProcessesFigures) {
  Allocations held;
  held.add(1 << 20, 0);
  setenv("LOCAL_RANK", "5", 1);
  metrics::MetricsOptions options;
  options.process = true;
  options.job = "nightly";
  const auto samples = parse_exposition(metrics::render_metrics(options));
  unsetenv("LOCAL_RANK");
  const std::map<std::string, std::string> mine{
      {"device", "0"}, {"pid", std::to_string(getpid())}, {"local_rank", "5"}, {"job", "nightly"}};
  EXPECT_TRUE(find_sample(samples, "cudascope_memory_allocated_bytes", mine).has_value());
  EXPECT_TRUE(find_sample(samples, "cudascope_device_info", mine).has_value());
  EXPECT_FALSE(find_sample(samples, "cudascope_device_info", {{"device", "1"}}).has_value()) << "device 1 unused";
  for (const auto& sample : samples) EXPECT_EQ(sample.name.rfind("cudascope_gpu_", 0), std::string::npos) << sample.name;
}

TEST(MetricsTest, PerStreamFiguresNameTheStream) {
  cuda::Stream side;
  void* on_side = cuda::caching_allocator_alloc(1 << 20, 0, side);
  const auto samples = parse_exposition(metrics::render_metrics());
  EXPECT_EQ(find_sample(samples, "cudascope_memory_stream_allocated_bytes",
                        {{"device", "0"}, {"stream", std::to_string(side.id())}}),
            static_cast<double>(1 << 20));
  cuda::caching_allocator_delete(on_side);
}

TEST(MetricsTest, DeviceInfoAndConstantLabels) {
  metrics::MetricsOptions options;
  options.host = "node-7";
  options.rank = "3";
  const auto samples = parse_exposition(metrics::render_metrics(options));
  const auto info = find_sample(samples, "cudascope_device_info",
                                {{"device", "0"}, {"host", "node-7"}, {"rank", "3"}, {"backend", cuda::backend_name()}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(*info, 1.0);
  for (const auto& sample : samples) {
    EXPECT_EQ(sample.labels.at("host"), "node-7") << sample.name;
    EXPECT_EQ(sample.name.rfind("cudascope_", 0), 0u) << sample.name;
  }
}

TEST(MetricsTest, DeviceHealthInBaseUnits) {
  metrics::MetricsOptions options;
  options.allocator = false;
  // Power moves between readings (the sim's with its utilization): the scrape's figure must
  // lie between the readings taken just before and after it, give or take a fifth.
  const double watts_before = cuda::power_draw(0) / 1000.0;
  const auto samples = parse_exposition(metrics::render_metrics(options));
  const double watts_after = cuda::power_draw(0) / 1000.0;
  const auto watts = find_sample(samples, "cudascope_gpu_power_watts", {{"device", "0"}});
  ASSERT_TRUE(watts.has_value());
  EXPECT_GT(*watts, 1.0) << "a powered device draws watts, not milliwatts or nothing";
  EXPECT_GE(*watts, 0.8 * std::min(watts_before, watts_after));
  EXPECT_LE(*watts, 1.2 * std::max(watts_before, watts_after));
  const auto utilization = find_sample(samples, "cudascope_gpu_utilization_ratio", {{"device", "0"}});
  ASSERT_TRUE(utilization.has_value());
  EXPECT_GE(*utilization, 0.0);
  EXPECT_LE(*utilization, 1.0);
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_total_bytes", {{"device", "0"}}),
            static_cast<double>(cuda::mem_get_info(0).second));
  EXPECT_FALSE(find_sample(samples, "cudascope_memory_allocated_bytes", {}).has_value()) << "allocator was off";
  EXPECT_FALSE(find_sample(samples, "cudascope_device_info", {{"pid", std::to_string(getpid())}}).has_value())
      << "device health is not per process";
  // Figures beyond torch.cuda's: absent (not zero) where not reported, as on the simulated
  // device; plausible where NVML gives them.
  const auto telemetry = cuda::device_telemetry(0);
  const auto limit = find_sample(samples, "cudascope_gpu_power_limit_watts", {{"device", "0"}});
  EXPECT_EQ(limit.has_value(), telemetry.power_limit_milliwatts.has_value());
  if (limit) {
    EXPECT_GT(*limit, 10.0);
  }
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_clock_hertz", {{"device", "0"}}).has_value(),
            telemetry.memory_clock_mhz.has_value());
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_clock_event_active", {{"device", "0"}, {"reason", "sw_power_cap"}})
                .has_value(),
            telemetry.clock_event_reasons.has_value());
  if (cuda::backend_name() == "sim") {
    EXPECT_FALSE(limit.has_value()) << "the sim models no power limit";
  }
  // One memory series per process NVML (or the sim's model) lists on the device. On a real
  // GPU other processes (ctest runs tests side by side) come and go between the scrape and
  // the second query, so there each series only has to name a live-looking pid and hold memory.
  const auto processes = cuda::gpu_processes(0);
  const bool listing_is_stable = cuda::backend_name() == "sim";
  std::size_t process_series = 0;
  for (const auto& sample : samples) {
    if (sample.name != "cudascope_gpu_process_memory_bytes" || sample.labels.at("device") != "0") continue;
    ++process_series;
    const std::string& pid = sample.labels.at("pid");
    ASSERT_FALSE(pid.empty());
    EXPECT_EQ(pid.find_first_not_of("0123456789"), std::string::npos) << pid;
    if (!listing_is_stable) {
      EXPECT_GE(sample.value, 0.0) << pid;
      continue;
    }
    const auto listed = std::find_if(processes.begin(), processes.end(),
                                     [&](const auto& p) { return std::to_string(p.pid) == pid; });
    ASSERT_NE(listed, processes.end()) << pid;
    EXPECT_EQ(sample.value, static_cast<double>(listed->used_memory_bytes));
  }
  if (listing_is_stable) {
    EXPECT_EQ(process_series, processes.size());
  }
  EXPECT_EQ(find_sample(samples, "cudascope_gpu_memory_free_bytes", {{"device", "0"}}),
            *find_sample(samples, "cudascope_gpu_memory_total_bytes", {{"device", "0"}}) -
                *find_sample(samples, "cudascope_gpu_memory_used_bytes", {{"device", "0"}}));
}

TEST(MetricsTest, PromtoolAcceptsTheExposition) {
  if (!cudascope::testing::have_promtool()) GTEST_SKIP() << "no promtool on PATH (Debian package prometheus)";
  Allocations held;
  held.add(1 << 20);
  const std::string dir = temp_dir();
  std::ofstream(dir + "/metrics.txt") << metrics::render_metrics();
  metrics::MetricsOptions process;
  process.process = true;
  process.job = "a \"quoted\" job\\";
  std::ofstream(dir + "/process.txt") << metrics::render_metrics(process);
  for (const std::string file : {"metrics.txt", "process.txt"}) {
    EXPECT_EQ(run_command("promtool check metrics < " + dir + "/" + file), 0)
        << "promtool (Debian package prometheus) must be installed and accept " << file;
  }
}

TEST(MetricsServerTest, ServesTheSameTextOverHttp) {
  metrics::MetricsServer server("127.0.0.1:0");
  ASSERT_GT(server.port(), 0);
  const auto body = cudascope::testing::http_get(server.port(), "/metrics");
  ASSERT_TRUE(body.has_value());
  const auto samples = parse_exposition(*body);
  EXPECT_TRUE(find_sample(samples, "cudascope_device_info", {{"device", "0"}}).has_value());
  EXPECT_TRUE(find_sample(samples, "cudascope_memory_reserved_bytes", {{"device", "0"}, {"pool", "all"}}).has_value());
}

TEST(MetricsServerTest, BindFailureNamesTheAddress) {
  try {
    metrics::MetricsServer server("203.0.113.1:1");  // not an address of this machine
    FAIL() << "listening should have failed";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("203.0.113.1:1"));
  }
}

// A real Prometheus server scrapes the exporter every second; its query API returns our figure.
TEST(PrometheusIntegrationTest, ServerScrapesAllocatorFigures) {
  if (!cudascope::testing::have_prometheus()) GTEST_SKIP() << "no prometheus binary on PATH (Debian package prometheus)";
  Allocations held;
  held.add(5 << 20);
  metrics::MetricsServer exporter("127.0.0.1:0");
  const std::string dir = temp_dir();
  const int prometheus_port = cudascope::testing::free_port();
  std::ofstream(dir + "/prometheus.yml") << "global:\n  scrape_interval: 1s\n"
                                         << "scrape_configs:\n  - job_name: cudascope\n    static_configs:\n"
                                         << "      - targets: ['127.0.0.1:" << exporter.port() << "']\n";
  const std::string config = "--config.file=" + dir + "/prometheus.yml";
  const std::string storage = "--storage.tsdb.path=" + dir + "/data";
  const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port);
  std::vector<const char*> argv{"prometheus", config.c_str(), storage.c_str(), listen.c_str(), "--log.level=warn",
                                nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawnp(&pid, "prometheus", nullptr, nullptr, const_cast<char* const*>(argv.data()), environ), 0)
      << "the prometheus server (Debian package prometheus) must be installed";
  const double expected = static_cast<double>(cuda::memory_allocated(0));
  std::optional<double> scraped;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!scraped && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(500ms);
    const auto body = cudascope::testing::http_get(
        prometheus_port, "/api/v1/query?query=cudascope_memory_allocated_bytes%7Bpool%3D%22all%22%2Cdevice%3D%220%22%7D");
    if (!body) continue;
    const auto reply = nlohmann::json::parse(*body, nullptr, false);
    if (reply.is_discarded() || reply["data"]["result"].empty()) continue;
    scraped = std::stod(reply["data"]["result"][0]["value"][1].get<std::string>());
  }
  // Every query of the Grafana dashboard is valid PromQL that finds series.
  std::vector<std::string> failed_queries;
  for (const std::string& query : cudascope::testing::dashboard_queries(CUDASCOPE_DASHBOARD_PATH)) {
    const auto body = cudascope::testing::http_get(prometheus_port, "/api/v1/query?query=" + cudascope::testing::url_encode(query));
    const auto reply = body ? nlohmann::json::parse(*body, nullptr, false) : nlohmann::json();
    if (reply.is_discarded() || reply.value("status", "") != "success") failed_queries.push_back(query);
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(scraped.has_value()) << "Prometheus never returned the scraped figure";
  EXPECT_EQ(*scraped, expected);
  EXPECT_TRUE(failed_queries.empty()) << "rejected: " << ::testing::PrintToString(failed_queries);
}

TEST(GrafanaDashboardTest, EveryMetricItQueriesIsExported) {
  Allocations held;
  held.add(1 << 20);
  std::set<std::string> exported;
  for (const auto& sample : parse_exposition(metrics::render_metrics())) exported.insert(sample.name);
  for (const auto& sample : parse_exposition(live_metrics_text())) exported.insert(sample.name);
  for (const auto& sample : parse_exposition(sampled_live_metrics_text())) exported.insert(sample.name);
  // Figures only a GPU gives (NVML on Hopper: GPM, NVLink, XID events), as the exporter
  // formats them when the device reports them.
  for (const auto& sample : parse_exposition(metrics::render_device_health(every_device_figure()))) {
    exported.insert(sample.name);
  }
  const std::regex metric_name("cudascope_[a-z_]+");
  std::size_t checked = 0;
  for (const std::string& query : cudascope::testing::dashboard_queries(CUDASCOPE_DASHBOARD_PATH)) {
    for (std::sregex_iterator it(query.begin(), query.end(), metric_name), end; it != end; ++it) {
      EXPECT_TRUE(exported.count(it->str())) << it->str() << " in " << query;
      ++checked;
    }
  }
  EXPECT_GE(checked, 12u);
}

// CUDASCOPE_METRICS=address:port makes any program using the runtime serve its figures.
TEST(MetricsAutostartTest, EnvironmentVariableServesAnUnmodifiedProgram) {
  const int port = cudascope::testing::free_port();
  const std::string command = "CUDASCOPE_BACKEND=sim CUDASCOPE_METRICS=127.0.0.1:" + std::to_string(port) + " " +
                              CUDASCOPE_CLI_PATH + " demo --iterations 400 --kernel-ms 10 > /dev/null 2>&1";
  std::thread program([&] { std::system(command.c_str()); });
  std::optional<std::string> body;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (!body && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    body = cudascope::testing::http_get(port, "/metrics");
  }
  program.join();
  ASSERT_TRUE(body.has_value()) << "nothing served on port " << port;
  const auto samples = parse_exposition(*body);
  // Its own figures only: device 0, which the demo uses, with its pid; not device 1, and
  // no device health (which `cudascope serve` exports once for every process).
  EXPECT_EQ(find_sample(samples, "cudascope_device_info", {{"device", "0"}, {"backend", "sim"}}), 1.0);
  EXPECT_FALSE(find_sample(samples, "cudascope_device_info", {{"device", "1"}}).has_value());
  const auto reserved = std::find_if(samples.begin(), samples.end(), [](const auto& s) {
    return s.name == "cudascope_memory_reserved_bytes" && s.labels.at("device") == "0";
  });
  ASSERT_NE(reserved, samples.end());
  EXPECT_FALSE(reserved->labels.at("pid").empty());
  EXPECT_NE(reserved->labels.at("pid"), std::to_string(getpid()));
  for (const auto& sample : samples) EXPECT_EQ(sample.name.rfind("cudascope_gpu_", 0), std::string::npos) << sample.name;
}
