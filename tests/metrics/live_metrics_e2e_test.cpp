// End to end on sim with a real Prometheus server: `cudascope run --metrics` around a program
// using the runtime; Prometheus's kernel count equals the count in the trace of the same run,
// the series carry the process's pid, and every query of the Grafana dashboard is valid PromQL
// (those of the device and process panels returning data).
#include "metrics_text.h"
#include "prometheus_server.h"
#include "test_support.h"

#include <cudascope/metrics/metrics.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

using cudascope::testing::PrometheusServer;
using namespace std::chrono_literals;

namespace {

std::string temp_dir() {
  char pattern[] = "/tmp/cudascope-live-XXXXXX";
  return mkdtemp(pattern);
}

// Kernel events ("cat": "kernel") in a Chrome trace.
std::size_t kernels_in_trace(const std::string& path) {
  std::ifstream file(path);
  const auto trace = nlohmann::json::parse(file, nullptr, false);
  if (trace.is_discarded()) return 0;
  std::size_t n = 0;
  for (const auto& event : trace.at("traceEvents")) n += event.value("cat", "") == "kernel" && event.value("ph", "") == "X";
  return n;
}

int run_shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(LiveMetricsE2eTest, PrometheusKernelCountEqualsTheTrace) {
  if (!cudascope::testing::have_prometheus()) GTEST_SKIP() << "no prometheus binary on PATH (Debian package prometheus)";
  // `cudascope serve`'s part (device health), from this process on the sim.
  cudascope::metrics::MetricsServer serve("127.0.0.1:0");
  const int live_port = cudascope::testing::free_port();
  PrometheusServer prometheus({"127.0.0.1:" + std::to_string(serve.port()), "127.0.0.1:" + std::to_string(live_port)});

  const std::string dir = temp_dir();
  // The program holds its process 4 s after the last kernel: Prometheus scrapes (every 1 s)
  // the final figures before it exits.
  const std::string command = "CUDASCOPE_BACKEND=sim timeout 120 " + std::string(CUDASCOPE_CLI_PATH) +
                              " run --metrics 127.0.0.1:" + std::to_string(live_port) +
                              " --metrics-top 5 --metrics-label-nvtx --job e2e -o " + dir + "/trace.json -- " +
                              CUDASCOPE_CLI_PATH + " demo --iterations 30 --kernel-ms 5 --hold 4 > " + dir +
                              "/run.log 2>&1";
  ASSERT_EQ(run_shell(command), 0) << "see " << dir << "/run.log";
  const std::size_t traced = kernels_in_trace(dir + "/trace.json");
  ASSERT_GT(traced, 0u) << "no kernels in the trace";

  // After the program exited its series are stale; the last scraped values stay queryable.
  const auto scraped = prometheus.wait_for_value("sum(max_over_time(cudascope_kernels_total{job=\"e2e\"}[10m]))", 30,
                                                 static_cast<double>(traced));
  ASSERT_TRUE(scraped.has_value()) << "Prometheus never returned cudascope_kernels_total; its targets: "
                                   << prometheus.get("/api/v1/targets").value_or("(no reply)") << "\nseries: "
                                   << prometheus.get("/api/v1/series?match[]=cudascope_kernels_total").value_or("(no reply)");
  EXPECT_EQ(*scraped, static_cast<double>(traced));
  // Bounded: 5 names and `other` per (device, range) at most, ranges bounded the same way.
  const auto kernel_series = prometheus.wait_for_value("count(max_over_time(cudascope_kernels_total[10m]))", 5);
  ASSERT_TRUE(kernel_series.has_value());
  EXPECT_LE(*kernel_series, 6.0);
  const auto range_series =
      prometheus.wait_for_value("count(max_over_time(cudascope_nvtx_range_duration_seconds_count[10m]))", 5);
  ASSERT_TRUE(range_series.has_value());
  EXPECT_LE(*range_series, 6.0) << "30 'step N' ranges and 'demo' under 5 names and other";
  // The program's own allocator figures carry its pid; no device-health series is doubled.
  EXPECT_TRUE(prometheus.wait_for_value("count(max_over_time(cudascope_memory_reserved_bytes{pid!=\"\"}[10m]))", 5));
  const auto health = prometheus.wait_for_value("max(count by (device) (cudascope_gpu_power_watts))", 10);
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(*health, 1.0) << "one power series per device: only `serve` exports device health";

  // Every dashboard query parses; those whose metrics this run exported return data over it
  // (the demo copies nothing, so the copy panel may be empty).
  std::set<std::string> stored;
  const auto names = nlohmann::json::parse(prometheus.get("/api/v1/label/__name__/values").value_or("{}"), nullptr, false);
  if (!names.is_discarded() && names.contains("data")) {
    for (const auto& name : names["data"]) stored.insert(name.get<std::string>());
  }
  EXPECT_GE(stored.size(), 20u);
  std::vector<std::string> rejected, empty;
  std::size_t with_data = 0;
  const std::regex metric("cudascope_[a-z_]+");
  for (const std::string& query : cudascope::testing::dashboard_queries(CUDASCOPE_DASHBOARD_PATH)) {
    const auto reply = prometheus.query(query);
    if (!reply || reply->value("status", "") != "success") rejected.push_back(query);
    bool all_stored = true;
    for (std::sregex_iterator it(query.begin(), query.end(), metric), end; it != end; ++it) {
      std::string name = it->str();
      all_stored = all_stored && stored.count(name) > 0;
    }
    if (!all_stored) continue;
    ++with_data;
    const auto over_run = prometheus.query("count(last_over_time((" + query + ")[10m:1s]))");
    if (!over_run || (*over_run)["data"]["result"].empty()) empty.push_back(query);
  }
  EXPECT_GE(with_data, 20u) << "dashboard queries over metrics this run exported";
  EXPECT_TRUE(rejected.empty()) << "rejected: " << ::testing::PrintToString(rejected);
  EXPECT_TRUE(empty.empty()) << "no data: " << ::testing::PrintToString(empty);
  std::system(("rm -rf '" + dir + "'").c_str());
}
