// Live metrics from profiler records: counts equal the records, names are bounded with an
// `other` series, counters never decrease, NVTX durations land in their buckets, kernels
// carry the range they were launched in, and promtool accepts the text.
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/metrics/profile_metrics.h>

#include <cstring>
#include <fstream>
#include <map>

namespace metrics = cudascope::metrics;
namespace profiler = cudascope::profiler;
using cudascope::testing::find_sample;
using cudascope::testing::parse_exposition;
using cudascope::testing::Sample;

namespace {

// Kernel names live for the process, as CUPTI's do.
const char* const kNames[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta"};

profiler::Record kernel(const char* name, std::uint64_t start, std::uint64_t ns, std::uint32_t correlation = 0) {
  profiler::Record r = profiler::make_device_record(profiler::RecordKind::kKernel, 0, 7, start, start + ns, correlation);
  r.u.kernel.name = name;
  return r;
}

profiler::Record nvtx(profiler::RecordKind kind, std::uint32_t thread, std::uint64_t t, const char* text = "") {
  profiler::Record r = profiler::make_record(kind);
  r.thread_id = thread;
  r.start_ns = r.end_ns = t;
  r.text_size = static_cast<std::uint16_t>(std::strlen(text));
  std::memcpy(r.u.nvtx.text, text, std::strlen(text));
  return r;
}

metrics::ProfileMetricsOptions options(std::size_t top, bool label_nvtx = false) {
  metrics::ProfileMetricsOptions o;
  o.top_names = top;
  o.label_nvtx = label_nvtx;
  o.labels.host = "node";
  o.labels.pid = "42";
  o.labels.rank = "1";
  return o;
}

// Sum of a family's samples with the given labels.
double total(const std::vector<Sample>& samples, const std::string& name, const std::map<std::string, std::string>& wanted = {}) {
  double sum = 0;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : wanted) match = match && s.labels.count(k) && s.labels.at(k) == v;
    if (match) sum += s.value;
  }
  return sum;
}

std::size_t series(const std::vector<Sample>& samples, const std::string& name) {
  std::size_t n = 0;
  for (const Sample& s : samples) n += s.name == name;
  return n;
}

}  // namespace

TEST(ProfileMetricsTest, TopNamesByTimeHaveSeriesAndTheRestIsOther) {
  metrics::ProfileMetrics live(options(2));
  std::vector<profiler::Record> records;
  // alpha: 3 x 100 ns, beta: 2 x 1000 ns, the four others: 1 x 10 ns each.
  for (int i = 0; i < 3; ++i) records.push_back(kernel(kNames[0], 1000 + i, 100));
  for (int i = 0; i < 2; ++i) records.push_back(kernel(kNames[1], 2000 + i, 1000));
  for (int i = 2; i < 6; ++i) records.push_back(kernel(kNames[i], 3000 + i, 10));
  live.consume(records.data(), records.size());
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_total", {{"kernel", "beta"}, {"device", "0"}}), 2.0);
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_total", {{"kernel", "alpha"}}), 3.0);
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_total", {{"kernel", "other"}}), 4.0);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_kernel_seconds_total", {{"kernel", "beta"}}), 2000e-9);
  EXPECT_EQ(series(samples, "cudascope_kernels_total"), 3u) << "two names and other";
  EXPECT_EQ(total(samples, "cudascope_kernels_total"), 9.0);
  EXPECT_EQ(find_sample(samples, "cudascope_profiler_records_total", {{"pid", "42"}, {"rank", "1"}}), 9.0);
}

TEST(ProfileMetricsTest, CountersNeverDecreaseWhenANameTakesAFreeSlotLater) {
  metrics::ProfileMetrics live(options(2));
  profiler::Record first = kernel(kNames[0], 0, 50);
  live.consume(&first, 1);
  const auto before = parse_exposition(live.render());
  std::vector<profiler::Record> later(5, kernel(kNames[1], 100, 500));
  live.consume(later.data(), later.size());
  const auto middle = parse_exposition(live.render());  // beta takes the free slot now
  live.consume(later.data(), 2);
  const auto after = parse_exposition(live.render());
  // In scrape order (indices, not the variables' addresses: their order is the compiler's).
  const std::vector<const std::vector<Sample>*> scrapes = {&before, &middle, &after};
  for (std::size_t i = 0; i < scrapes.size(); ++i) {
    for (const Sample& s : *scrapes[i]) {
      if (s.name != "cudascope_kernels_total") continue;
      for (std::size_t j = i + 1; j < scrapes.size(); ++j) {
        const auto value = find_sample(*scrapes[j], s.name, s.labels);
        ASSERT_TRUE(value.has_value()) << s.labels.at("kernel") << " vanished";
        EXPECT_GE(*value, s.value) << s.labels.at("kernel");
      }
    }
  }
  EXPECT_EQ(total(after, "cudascope_kernels_total"), 8.0);
  EXPECT_EQ(find_sample(after, "cudascope_kernels_total", {{"kernel", "beta"}}), 2.0) << "counted from its slot on";
}

TEST(ProfileMetricsTest, TenThousandKernelNamesStayBounded) {
  metrics::ProfileMetrics live(options(20));
  static std::vector<std::string> names;  // records point at names for the process's life
  for (int i = 0; i < 10000; ++i) names.push_back("kernel_" + std::to_string(i));
  std::vector<profiler::Record> records;
  for (int i = 0; i < 10000; ++i) records.push_back(kernel(names[i].c_str(), i, 1 + i % 97));
  live.consume(records.data(), records.size());
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(series(samples, "cudascope_kernels_total"), 21u);
  EXPECT_EQ(total(samples, "cudascope_kernels_total"), 10000.0);
}

TEST(ProfileMetricsTest, NvtxRangeDurationsAreHistogramsByName) {
  metrics::ProfileMetrics live(options(20));
  std::vector<profiler::Record> records{
      nvtx(profiler::RecordKind::kNvtxPush, 1, 0, "forward"),
      nvtx(profiler::RecordKind::kNvtxPop, 1, 2'000'000),  // 2 ms
      nvtx(profiler::RecordKind::kNvtxPush, 1, 3'000'000, "forward"),
      nvtx(profiler::RecordKind::kNvtxPush, 1, 3'000'000, "inner"),
      nvtx(profiler::RecordKind::kNvtxPop, 1, 3'000'005),        // 5 ns
      nvtx(profiler::RecordKind::kNvtxPop, 1, 3'000'000'000),    // ~3 s
  };
  live.consume(records.data(), records.size());
  const auto samples = parse_exposition(live.render());
  const std::map<std::string, std::string> forward{{"range", "forward"}, {"domain", "default"}};
  EXPECT_EQ(find_sample(samples, "cudascope_nvtx_range_duration_seconds_count", forward), 2.0);
  auto bucket = forward;
  bucket["le"] = "0.005";
  EXPECT_EQ(find_sample(samples, "cudascope_nvtx_range_duration_seconds_bucket", bucket), 1.0);
  bucket["le"] = "5";
  EXPECT_EQ(find_sample(samples, "cudascope_nvtx_range_duration_seconds_bucket", bucket), 2.0);
  EXPECT_EQ(find_sample(samples, "cudascope_nvtx_range_duration_seconds_count", {{"range", "inner"}}), 1.0);
}

TEST(ProfileMetricsTest, KernelsCarryTheRangeTheyWereLaunchedIn) {
  metrics::ProfileMetrics live(options(20, /*label_nvtx=*/true));
  profiler::Record launch = profiler::make_record(profiler::RecordKind::kRuntimeApi);
  launch.thread_id = 1;
  launch.start_ns = 150;
  launch.correlation_id = 7;
  launch.u.api.name = "cudaLaunchKernel";
  // The kernel's record comes first, as CUPTI's buffers may deliver it; the launch after.
  std::vector<profiler::Record> records{kernel(kNames[0], 400, 100, 7), kernel(kNames[0], 500, 100, 8),
                                        nvtx(profiler::RecordKind::kNvtxPush, 1, 100, "backward"), launch,
                                        nvtx(profiler::RecordKind::kNvtxPop, 1, 200)};
  live.consume(records.data(), records.size());
  live.flushed();
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_total", {{"kernel", "alpha"}, {"nvtx_range", "backward"}}), 1.0);
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_total", {{"kernel", "alpha"}, {"nvtx_range", ""}}), 1.0)
      << "correlation 8 had no launch in a range";
}

TEST(ProfileMetricsTest, CopiesMemsetsSyncsMemoryAndDropsAreCounted) {
  metrics::ProfileMetrics live(options(20));
  profiler::Record copy = profiler::make_device_record(profiler::RecordKind::kMemcpy, 1, 3, 0, 1000, 1);
  copy.detail = static_cast<std::uint8_t>(profiler::CopyKindCode::kHtoD);
  copy.u.copy.bytes = 4096;
  profiler::Record fill = profiler::make_device_record(profiler::RecordKind::kMemset, 0, 3, 0, 10, 2);
  fill.u.memset.bytes = 512;
  profiler::Record sync = profiler::make_record(profiler::RecordKind::kSync);
  sync.detail = static_cast<std::uint8_t>(profiler::SyncType::kStream);
  sync.start_ns = 0;
  sync.end_ns = 3000;
  profiler::Record grow = profiler::make_record(profiler::RecordKind::kAllocator);
  grow.device = 0;
  grow.u.allocator.reserved_bytes = 20 << 20;
  profiler::Record shrink = grow;
  shrink.u.allocator.reserved_bytes = 2 << 20;
  profiler::Record dropped = profiler::make_record(profiler::RecordKind::kDropped);
  dropped.detail = static_cast<std::uint8_t>(profiler::DropSource::kRecordBuffers);
  dropped.u.dropped.total = 12;
  std::vector<profiler::Record> records{copy, copy, fill, sync, grow, shrink, dropped};
  live.consume(records.data(), records.size());
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_memcpy_total", {{"device", "1"}, {"kind", "HtoD"}}), 2.0);
  EXPECT_EQ(find_sample(samples, "cudascope_memcpy_bytes_total", {{"kind", "HtoD"}}), 8192.0);
  EXPECT_EQ(find_sample(samples, "cudascope_memset_bytes_total", {{"device", "0"}}), 512.0);
  EXPECT_DOUBLE_EQ(*find_sample(samples, "cudascope_sync_seconds_total", {}), 3e-6);
  EXPECT_EQ(find_sample(samples, "cudascope_process_device_memory_bytes", {{"device", "0"}}), double(2 << 20));
  EXPECT_EQ(find_sample(samples, "cudascope_process_device_memory_peak_bytes", {{"device", "0"}}), double(20 << 20));
  EXPECT_EQ(find_sample(samples, "cudascope_profiler_dropped_records_total", {{"source", "buffers"}}), 12.0);
}

TEST(ProfileMetricsTest, PromtoolAcceptsTheText) {
  if (!cudascope::testing::have_promtool()) GTEST_SKIP() << "no promtool on PATH (Debian package prometheus)";
  metrics::ProfileMetrics live(options(1, true));
  std::vector<profiler::Record> records{kernel("_Z6matmulPfS_S_i", 0, 10), kernel(kNames[1], 0, 5),
                                        nvtx(profiler::RecordKind::kNvtxPush, 1, 0, "a \"quoted\" \\ range"),
                                        nvtx(profiler::RecordKind::kNvtxPop, 1, 10)};
  live.consume(records.data(), records.size());
  live.flushed();
  const std::string text = live.render();
  EXPECT_NE(text.find("kernel=\"matmul(float*, float*, float*, int)\""), std::string::npos) << "demangled";
  char dir[] = "/tmp/cudascope-live-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::ofstream(std::string(dir) + "/live.txt") << text;
  EXPECT_EQ(std::system(("promtool check metrics < " + std::string(dir) + "/live.txt").c_str()), 0) << text;
}
