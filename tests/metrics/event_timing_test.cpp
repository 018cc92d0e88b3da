// Event::elapsed_time spans end to end on sim: the runtime reports each span, the profiler
// records it, the Chrome trace shows it as a complete event on the start event's stream
// around the work between the two records, and live metrics count it in a histogram by the
// start event's name.
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/cuda/event.h>
#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/stream.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/metrics/profile_metrics.h>
#include <cudascope/profiler/session.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <vector>

namespace cuda = cudascope::cuda;
namespace metrics = cudascope::metrics;
namespace profiler = cudascope::profiler;
using cudascope::testing::find_sample;
using cudascope::testing::parse_exposition;
using namespace std::chrono_literals;

namespace {

std::vector<nlohmann::json> trace_events(const std::string& path, const std::string& category) {
  std::ifstream file(path);
  const auto trace = nlohmann::json::parse(file, nullptr, false);
  std::vector<nlohmann::json> events;
  if (trace.is_discarded()) return events;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.value("cat", "") == category && event.value("ph", "") == "X") events.push_back(event);
  }
  return events;
}

}  // namespace

TEST(EventTimingTest, ElapsedTimeIsARangeOnTheStreamAndAHistogramByName) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  char dir_pattern[] = "/tmp/cudascope-events-XXXXXX";
  const std::string path = std::string(mkdtemp(dir_pattern)) + "/trace.json";
  auto live = std::make_shared<metrics::ProfileMetrics>(metrics::ProfileMetricsOptions{});
  profiler::SessionOptions options;
  options.source = profiler::SourceKind::kSim;
  options.flush_interval = 20ms;
  profiler::Session session(options);
  session.start(metrics::ProfileMetrics::tee(live, cudascope::exporters::open_chrome_trace(path)));

  cuda::Stream stream(0);
  cuda::Event start(/*enable_timing=*/true), end(true);
  start.set_name("forward");
  std::vector<float> named_ms;
  for (int i = 0; i < 3; ++i) {
    start.record(stream);
    cuda::busy_wait(2ms, stream);
    end.record(stream);
    end.synchronize();
    named_ms.push_back(start.elapsed_time(end));
  }
  cuda::Event unnamed_start(true), unnamed_end(true);
  unnamed_start.record(stream);
  cuda::busy_wait(1ms, stream);
  unnamed_end.record(stream);
  unnamed_end.synchronize();
  const float unnamed_ms = unnamed_start.elapsed_time(unnamed_end);
  session.stop();

  // The trace: one complete event per elapsed_time, on the stream's row, as long as the
  // time elapsed_time returned, around the kernel between the two records.
  const auto spans = trace_events(path, "event_timing");
  const auto kernels = trace_events(path, "kernel");
  ASSERT_EQ(spans.size(), 4u);
  ASSERT_EQ(kernels.size(), 4u);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const auto& span = spans[i];
    const auto& kernel = kernels[i];
    EXPECT_EQ(span.at("name"), i < 3 ? "forward" : "event timing");
    EXPECT_EQ(span.at("pid").get<std::int64_t>(), 0);
    EXPECT_EQ(span.at("tid").get<std::int64_t>(), stream.id());
    const double ms = i < 3 ? named_ms[i] : unnamed_ms;
    EXPECT_NEAR(span.at("dur").get<double>(), ms * 1000.0, 1.0) << "dur is elapsed_time's result, in us";
    // Placed on the host clock through the reference event: around the kernel the two records
    // enclose (0.3 ms allowed for the placement). A loaded machine only widens the gaps
    // between the records and the kernel, so the test asserts the enclosure, not closeness.
    const double span_start = span.at("ts").get<double>(), span_end = span_start + span.at("dur").get<double>();
    const double kernel_start = kernel.at("ts").get<double>(), kernel_end = kernel_start + kernel.at("dur").get<double>();
    EXPECT_LE(span_start, kernel_start + 300.0) << i;
    EXPECT_GE(span_end, kernel_end - 300.0) << i;
    EXPECT_GT(span_end, kernel_start) << i << ": the span overlaps its kernel";
    EXPECT_LT(span_start, kernel_end) << i << ": the span overlaps its kernel";
  }

  // Metrics: a duration histogram by the start event's name, unnamed spans under "".
  const auto samples = parse_exposition(live->render());
  EXPECT_EQ(find_sample(samples, "cudascope_event_duration_seconds_count", {{"event", "forward"}}), 3.0);
  EXPECT_EQ(find_sample(samples, "cudascope_event_duration_seconds_count", {{"event", ""}}), 1.0);
  const auto sum = find_sample(samples, "cudascope_event_duration_seconds_sum", {{"event", "forward"}});
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, (named_ms[0] + named_ms[1] + named_ms[2]) / 1000.0, 1e-5);
}
