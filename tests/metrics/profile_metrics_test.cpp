// Live metrics from profiler records: counts equal the records, names are bounded with an
// `other` series, counters never decrease, NVTX durations land in their buckets, kernels
// carry the range they were launched in, and promtool accepts the text.
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/metrics/profile_metrics.h>

#include <cmath>
#include <cstdlib>
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

// A runtime call's record, as the launch activity records it.
profiler::Record call(const char* name, std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
  profiler::Record r = profiler::make_record(profiler::RecordKind::kRuntimeApi);
  r.start_ns = start;
  r.end_ns = end;
  r.correlation_id = correlation;
  r.u.api.name = name;
  return r;
}

TEST(ProfileMetricsTest, HostWaitsAreCountedFromSynchronizeCallsWhenNoSyncRecordIsTaken) {
  const std::vector<profiler::Record> records{
      call("cudaLaunchKernel", 0, 500, 1),           call("cudaStreamSynchronize", 1000, 4000, 2),
      call("cudaStreamSynchronize_ptsz", 5000, 6000, 3), call("cudaEventSynchronize", 7000, 7500, 4),
      call("cudaDeviceSynchronize", 8000, 10000, 5), call("cudaMemcpyAsync", 11000, 11200, 6)};
  metrics::ProfileMetricsOptions from_calls = options(20);
  from_calls.host_waits_from_calls = true;
  metrics::ProfileMetrics live(from_calls);
  live.consume(records.data(), records.size());
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_sync_total", {{"type", "Stream Sync"}}), 2.0);
  EXPECT_DOUBLE_EQ(find_sample(samples, "cudascope_sync_seconds_total", {{"type", "Stream Sync"}}).value_or(-1), 4e-6);
  EXPECT_EQ(find_sample(samples, "cudascope_sync_total", {{"type", "Event Sync"}}), 1.0);
  EXPECT_EQ(find_sample(samples, "cudascope_sync_total", {{"type", "Context Sync"}}), 1.0)
      << "cudaDeviceSynchronize, typed as CUPTI's record of it";
  double waits = 0;
  for (const auto& sample : samples) {
    if (sample.name == "cudascope_sync_total") waits += sample.value;
  }
  EXPECT_EQ(waits, 4.0) << "launches and copies are no waits";

  metrics::ProfileMetrics without(options(20));  // sync records taken, or no launch records
  without.consume(records.data(), records.size());
  EXPECT_FALSE(find_sample(parse_exposition(without.render()), "cudascope_sync_total", {}).has_value());
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

// --- Sampled kernel records (profiler/kernel_sampling.h) -----------------------------------
// The estimator on a known workload: a synthetic timeline of kernels, of which only those
// starting inside the sampled windows reach the metrics (as CUPTI delivers only the kernels
// launched while its kernel records are on), windows drawn by the sampler's own schedule.

namespace {

constexpr std::uint64_t kMs = 1'000'000;

// The workload, 250 ms steps (four to each 1 s period, so a window at a fixed offset would
// always see the same phase): "steady" every 97 us throughout; "burst" 300 kernels 100 us
// apart in the first 30 ms of each step.
struct Workload {
  static constexpr std::uint64_t kStep = 250 * kMs;
  static constexpr std::uint64_t kSteadyEvery = 97'000;
  static constexpr std::uint64_t kBurstEvery = 100'000;
  static constexpr std::uint64_t kBurstPerStep = 300;

  // The kernels starting in [from, to).
  static void kernels_in(std::uint64_t from, std::uint64_t to, std::vector<profiler::Record>& out) {
    for (std::uint64_t t = (from + kSteadyEvery - 1) / kSteadyEvery * kSteadyEvery; t < to; t += kSteadyEvery) {
      out.push_back(kernel("steady", t, 5'000));
    }
    for (std::uint64_t step = from / kStep * kStep; step < to; step += kStep) {
      for (std::uint64_t i = 0; i < kBurstPerStep; ++i) {
        const std::uint64_t t = step + i * kBurstEvery;
        if (t >= from && t < to) out.push_back(kernel("burst", t, 20'000));
      }
    }
  }
  static std::uint64_t steady_until(std::uint64_t end) { return (end + kSteadyEvery - 1) / kSteadyEvery; }
  static std::uint64_t burst_until(std::uint64_t end) { return end / kStep * kBurstPerStep; }  // end on a step
};

struct SampledRun {
  std::vector<double> steady_per_window, burst_per_window;  // each window's own estimate of its period
  std::vector<double> steady_estimates;                     // the exported estimate after each window
  std::string last_text;
};

// `periods` periods of the workload through ProfileMetrics, sampled as the sampler would.
SampledRun run_sampled(std::uint64_t periods, std::uint64_t& now) {
  profiler::SamplingPlan plan;  // 50 ms in every 1 s
  auto sampling = std::make_shared<profiler::KernelSampling>(plan, [&now] { return now; });
  metrics::ProfileMetricsOptions o = options(10);
  o.kernel_sampling = sampling;
  metrics::ProfileMetrics live(o);
  profiler::SamplingSchedule schedule(plan, 2024);
  const auto period = static_cast<std::uint64_t>(plan.period.count());
  const auto window = static_cast<std::uint64_t>(plan.slot().count());
  SampledRun run;
  sampling->begin(0);
  for (std::uint64_t k = 0; k < periods; ++k) {
    const std::uint64_t open = k * period + static_cast<std::uint64_t>(schedule.next_offset().count());
    sampling->open(open, plan.weight());
    std::vector<profiler::Record> seen;
    Workload::kernels_in(open, open + window, seen);
    sampling->close(open + window);
    live.consume(seen.data(), seen.size());
    live.flushed();
    std::uint64_t steady = 0, burst = 0;
    for (const auto& r : seen) (std::strcmp(r.u.kernel.name, "steady") == 0 ? steady : burst) += 1;
    run.steady_per_window.push_back(static_cast<double>(steady * plan.weight()));
    run.burst_per_window.push_back(static_cast<double>(burst * plan.weight()));
    now = (k + 1) * period;
    run.last_text = live.render();
    run.steady_estimates.push_back(
        total(parse_exposition(run.last_text), "cudascope_kernels_estimated_total", {{"kernel", "steady"}}));
  }
  return run;
}

// The standard error of the mean of the windows' own estimates: what the estimate's spread is.
double standard_error(const std::vector<double>& per_window) {
  double mean = 0, squares = 0;
  for (double x : per_window) mean += x;
  mean /= static_cast<double>(per_window.size());
  for (double x : per_window) squares += (x - mean) * (x - mean);
  return std::sqrt(squares / static_cast<double>(per_window.size() - 1) / static_cast<double>(per_window.size()));
}

}  // namespace

// Stated bounds: a kernel running steadily is estimated within 1%. A bursty kernel locked to
// the period's phase is the hard case: a window meets a burst or not (p = 4 of 20 slots), so
// its estimate is binomial, with a relative standard error sqrt((1 - p) / (p K)) over K
// periods (11.5% for K = 300, five minutes at the default plan; it shrinks as one over the
// square root of the run's length). It must lie within four of those, and within four
// standard errors of the sampled windows' own spread (which a reader can compute too).
TEST(ProfileMetricsSamplingTest, ScaledEstimatesOfAKnownWorkloadAreWithinTheStatedError) {
  constexpr std::uint64_t kPeriods = 300;
  std::uint64_t now = 0;
  const SampledRun run = run_sampled(kPeriods, now);
  const auto samples = parse_exposition(run.last_text);
  const double steady = total(samples, "cudascope_kernels_estimated_total", {{"kernel", "steady"}});
  const double burst = total(samples, "cudascope_kernels_estimated_total", {{"kernel", "burst"}});
  const auto steady_true = static_cast<double>(Workload::steady_until(now));
  const auto burst_true = static_cast<double>(Workload::burst_until(now));
  EXPECT_NEAR(steady, steady_true, 0.01 * steady_true);
  const double burst_se = standard_error(run.burst_per_window) * kPeriods;
  EXPECT_NEAR(burst, burst_true, 4 * burst_se) << "standard error " << burst_se;
  const double p = 4.0 / 20.0;
  EXPECT_NEAR(burst, burst_true, 4 * std::sqrt((1 - p) / (p * kPeriods)) * burst_true);
  // GPU time is scaled alike: 5 us per steady kernel.
  EXPECT_NEAR(total(samples, "cudascope_kernel_seconds_estimated_total", {{"kernel", "steady"}}), steady * 5e-6, 1e-9 * steady);
}

TEST(ProfileMetricsSamplingTest, EstimatesComeWithTheSamplingRatioAndNeverPassForCounts) {
  std::uint64_t now = 0;
  const SampledRun run = run_sampled(20, now);
  const auto samples = parse_exposition(run.last_text);
  EXPECT_EQ(series(samples, "cudascope_kernels_total"), 0u) << "no estimate under a count's name";
  EXPECT_EQ(series(samples, "cudascope_kernel_seconds_total"), 0u);
  EXPECT_GT(series(samples, "cudascope_kernels_estimated_total"), 0u);
  EXPECT_DOUBLE_EQ(find_sample(samples, "cudascope_kernel_sampling_ratio", {}).value_or(-1), 0.05);
  // The sample's size: every record seen, unscaled.
  double seen = 0;
  for (double x : run.steady_per_window) seen += x / 20;
  for (double x : run.burst_per_window) seen += x / 20;
  EXPECT_EQ(find_sample(samples, "cudascope_kernel_sampled_records_total", {{"device", "0"}}), seen);
  for (std::size_t i = 1; i < run.steady_estimates.size(); ++i) {
    EXPECT_GE(run.steady_estimates[i], run.steady_estimates[i - 1]) << "an estimate is a counter: it never decreases";
  }
  EXPECT_EQ(series(samples, "cudascope_kernel_launches_total"), 0u) << "launches are counted only when asked";
  if (cudascope::testing::have_promtool()) {
    const std::string path = ::testing::TempDir() + "/sampled_metrics.txt";
    std::ofstream(path) << run.last_text;
    EXPECT_EQ(std::system(("promtool check metrics < " + path + " > /dev/null").c_str()), 0) << run.last_text;
  }
}

// Live metrics of a sampled recording whose timeline is a sampled window (weight 20) from 100
// to 200 ns, then from 1000 ns a stretch of full recording (a trace window; weight 1). The
// clock reads `now`.
struct WindowThenFullStretch {
  std::uint64_t now = 0;
  std::shared_ptr<profiler::KernelSampling> sampling =
      std::make_shared<profiler::KernelSampling>(profiler::SamplingPlan{}, [this] { return now; });
  metrics::ProfileMetrics live{sampled_options()};

  WindowThenFullStretch() {
    sampling->begin(0);
    sampling->open(100, 20);
    sampling->close(200);
    sampling->open(1000, 1);
  }
  metrics::ProfileMetricsOptions sampled_options() {
    metrics::ProfileMetricsOptions o = options(10);
    o.kernel_sampling = sampling;
    return o;
  }
};

TEST(ProfileMetricsSamplingTest, KernelsOfAFullRecordingStretchCountOnceEach) {
  WindowThenFullStretch run;
  auto& [now, sampling, live] = run;
  std::vector<profiler::Record> records{kernel(kNames[0], 150, 10), kernel(kNames[0], 1100, 10), kernel(kNames[0], 1200, 10)};
  live.consume(records.data(), records.size());
  now = 2000;
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_kernels_estimated_total", {{"kernel", "alpha"}}), 22.0);
  // On for 100 ns of the window and 1000 ns since the stretch began, of 2000 ns.
  EXPECT_DOUBLE_EQ(find_sample(samples, "cudascope_kernel_sampling_ratio", {}).value_or(-1), 1100.0 / 2000.0);
}

// Copies, memsets and host waits are recorded in the kernels' windows (cupti_source.cpp), so
// they are scaled by the same weights and never exported under a count's name.
TEST(ProfileMetricsSamplingTest, CopiesMemsetsAndSyncsOfASampledRecordingAreEstimatesToo) {
  WindowThenFullStretch run;
  auto& [now, sampling, live] = run;
  profiler::Record copy = profiler::make_device_record(profiler::RecordKind::kMemcpy, 0, 3, 150, 160, 1);
  copy.detail = static_cast<std::uint8_t>(profiler::CopyKindCode::kHtoD);
  copy.u.copy.bytes = 4096;
  profiler::Record late_copy = copy;
  late_copy.start_ns = 1100;
  late_copy.end_ns = 1130;
  late_copy.u.copy.bytes = 100;
  profiler::Record fill = profiler::make_device_record(profiler::RecordKind::kMemset, 0, 3, 170, 180, 2);
  fill.u.memset.bytes = 64;
  profiler::Record sync = profiler::make_record(profiler::RecordKind::kSync);
  sync.detail = static_cast<std::uint8_t>(profiler::SyncType::kStream);
  sync.start_ns = 190;
  sync.end_ns = 195;
  std::vector<profiler::Record> records{copy, late_copy, fill, sync};
  live.consume(records.data(), records.size());
  now = 2000;
  const auto samples = parse_exposition(live.render());
  EXPECT_EQ(find_sample(samples, "cudascope_memcpy_estimated_total", {{"kind", "HtoD"}}), 21.0);
  EXPECT_EQ(find_sample(samples, "cudascope_memcpy_bytes_estimated_total", {{"kind", "HtoD"}}), 20.0 * 4096 + 100);
  EXPECT_DOUBLE_EQ(find_sample(samples, "cudascope_memcpy_seconds_estimated_total", {}).value_or(-1), (20 * 10 + 30) * 1e-9);
  EXPECT_EQ(find_sample(samples, "cudascope_memset_estimated_total", {{"device", "0"}}), 20.0);
  EXPECT_EQ(find_sample(samples, "cudascope_memset_bytes_estimated_total", {{"device", "0"}}), 20.0 * 64);
  EXPECT_EQ(find_sample(samples, "cudascope_sync_estimated_total", {{"type", "Stream Sync"}}), 20.0);
  EXPECT_DOUBLE_EQ(find_sample(samples, "cudascope_sync_seconds_estimated_total", {}).value_or(-1), 20 * 5e-9);
  for (const char* count : {"cudascope_memcpy_total", "cudascope_memcpy_bytes_total", "cudascope_memset_total",
                            "cudascope_memset_bytes_total", "cudascope_sync_total", "cudascope_sync_seconds_total"}) {
    EXPECT_EQ(series(samples, count), 0u) << count << ": no estimate under a count's name";
  }
}
