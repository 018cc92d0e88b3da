// The caching host allocator's figures in the Prometheus exposition: equal to
// host_memory_stats, process-wide (no device label), served over HTTP and accepted by promtool.
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/cuda/host_memory.h>
#include <cudascope/metrics/metrics.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace cuda = cudascope::cuda;
namespace metrics = cudascope::metrics;
using cudascope::testing::find_sample;
using cudascope::testing::parse_exposition;

namespace {

// Pinned blocks held for a test: one in use, one freed into the cache.
class PinnedBlocks {
 public:
  PinnedBlocks() : in_use_(cuda::host::allocate(3000)) { cuda::host::free(cuda::host::allocate(1 << 20)); }
  ~PinnedBlocks() {
    cuda::host::free(in_use_);
    cuda::empty_host_cache();
  }
  PinnedBlocks(const PinnedBlocks&) = delete;
  PinnedBlocks& operator=(const PinnedBlocks&) = delete;

 private:
  void* in_use_;
};

double stat(const std::map<std::string, std::int64_t>& stats, const char* key) {
  return static_cast<double>(stats.at(key));
}

}  // namespace

TEST(HostMemoryMetricsTest, FiguresEqualHostMemoryStats) {
  PinnedBlocks blocks;
  const auto samples = parse_exposition(metrics::render_metrics());
  const auto stats = cuda::host_memory_stats();
  const std::map<std::string, std::string> any;
  const auto reserved = find_sample(samples, "cudascope_host_memory_reserved_bytes", any);
  ASSERT_TRUE(reserved.has_value());
  EXPECT_EQ(*reserved, stat(stats, "allocated_bytes.current"));
  EXPECT_GE(*reserved, 4096.0 + (1 << 20)) << "the block in use and the cached one";
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_active_bytes", any), stat(stats, "active_bytes.current"));
  EXPECT_GE(*find_sample(samples, "cudascope_host_memory_active_bytes", any), 4096.0);
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_reserved_peak_bytes", any), stat(stats, "allocated_bytes.peak"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_active_peak_bytes", any), stat(stats, "active_bytes.peak"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_segments", any), stat(stats, "allocations.current"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_blocks", any), stat(stats, "active_requests.current"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_allocations_total", any),
            stat(stats, "active_requests.allocated"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_host_allocs_total", any), stat(stats, "num_host_alloc"));
  EXPECT_EQ(find_sample(samples, "cudascope_host_memory_host_frees_total", any), stat(stats, "num_host_free"));
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_host_memory_host_alloc_seconds_total", any),
                   stat(stats, "host_alloc_time.total") * 1e-6);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_host_memory_host_free_seconds_total", any),
                   stat(stats, "host_free_time.total") * 1e-6);
  for (const auto& sample : samples) {
    if (sample.name.rfind("cudascope_host_memory_", 0) != 0) continue;
    EXPECT_EQ(sample.labels.count("device"), 0u) << sample.name << ": pinned memory belongs to no device";
    EXPECT_EQ(sample.labels.count("host"), 1u) << sample.name;
  }
}

TEST(HostMemoryMetricsTest, AllocatorOffLeavesThemOut) {
  PinnedBlocks blocks;
  metrics::MetricsOptions options;
  options.allocator = false;
  for (const auto& sample : parse_exposition(metrics::render_metrics(options))) {
    EXPECT_NE(sample.name.rfind("cudascope_host_memory_", 0), 0u) << sample.name;
  }
}

namespace {
// Child, in a fresh process: process mode leaves the figures out until pinned memory is used,
// then labels them with the pid. Prints what it saw.
int process_mode_child(int, char**) {
  metrics::MetricsOptions options;
  options.process = true;
  const auto before = parse_exposition(metrics::render_metrics(options));
  void* block = cuda::host::allocate(4096);
  const auto after = parse_exposition(metrics::render_metrics(options));
  cuda::host::free(block);
  const std::map<std::string, std::string> mine{{"pid", std::to_string(getpid())}};
  std::printf("before: %s\n", find_sample(before, "cudascope_host_memory_reserved_bytes", {}) ? "present" : "absent");
  const auto reserved = find_sample(after, "cudascope_host_memory_reserved_bytes", mine);
  std::printf("after: %s %.0f\n", reserved ? "present" : "absent", reserved.value_or(-1));
  return 0;
}
const cudascope::testing::ChildModeRegistrar process_mode{"--host-metrics-process-child", &process_mode_child};
}  // namespace

TEST(HostMemoryMetricsTest, ProcessModeExportsThemOnceThePinnedAllocatorWasUsed) {
  const auto r = cudascope::testing::run_self({"--host-metrics-process-child"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("before: absent"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("after: present 4096"));
}

TEST(HostMemoryMetricsTest, ServedOverHttpAndAcceptedByPromtool) {
  PinnedBlocks blocks;
  metrics::MetricsServer server("127.0.0.1:0");
  const auto body = cudascope::testing::http_get(server.port(), "/metrics");
  ASSERT_TRUE(body.has_value());
  const auto samples = parse_exposition(*body);
  EXPECT_GE(find_sample(samples, "cudascope_host_memory_reserved_bytes", {}).value_or(0), 4096.0 + (1 << 20));
  if (!cudascope::testing::have_promtool()) GTEST_SKIP() << "no promtool on PATH (Debian package prometheus)";
  // A fresh directory under TMPDIR (where the caller wants temporary files), removed after.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/cudascope-host-metrics-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << dir << ": " << std::strerror(errno);
  std::ofstream(dir + "/metrics.txt") << *body;
  const int status = std::system(("promtool check metrics < '" + dir + "/metrics.txt'").c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "promtool rejected " << dir << "/metrics.txt";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}
