// External correlation ids through CUPTI on a real GPU: the kernels launched between push
// and pop are tied to the pushed id, nested ids to the innermost, none after the pop.
// (Elsewhere push/pop are no-ops: the sim records no external ids, so this needs a GPU.)
#include "test_support.h"

#include <cudascope/profiler/external_correlation.h>
#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/session.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace cudascope;
using namespace cudascope::profiler;

namespace {

// What one traced push/launch/pop sequence produced: per kernel in launch order, the
// external id CUPTI tied to it (0 for none), and the counts behind it for the failure text.
struct Observed {
  std::vector<std::uint64_t> ids;
  std::size_t external_records = 0;
  std::size_t api_records = 0;
  std::string detail() const {
    return "external records " + std::to_string(external_records) + ", runtime API records " +
           std::to_string(api_records) + ", kernels " + std::to_string(ids.size());
  }
};

// With `sampling`, a sampled recording whose sampler has switched its window on first.
Observed trace_pushed_ids(const ActivitySet& activities, std::shared_ptr<KernelSampling> sampling = nullptr) {
  SessionOptions options;
  options.source = SourceKind::kCupti;
  options.activities = activities;
  options.kernel_sampling = sampling;
  Session session(options);
  session.start();
  for (int i = 0; sampling && i < 5000 && !sampling->recording_kernels(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cuda::Stream stream(0);
  push_external_correlation_id(100);
  cuda::busy_wait(std::chrono::microseconds(20), stream);
  push_external_correlation_id(200);
  cuda::busy_wait(std::chrono::microseconds(20), stream);
  pop_external_correlation_id();
  pop_external_correlation_id();
  cuda::busy_wait(std::chrono::microseconds(20), stream);
  stream.synchronize();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  Observed seen;
  std::map<std::uint32_t, std::uint64_t> external;  // correlation id -> external id
  std::vector<const Record*> kernels;
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kExternalCorrelation) {
      external[r.correlation_id] = r.u.external.external_id;
      ++seen.external_records;
    }
    if (r.kind == RecordKind::kRuntimeApi) ++seen.api_records;
    if (r.kind == RecordKind::kKernel) kernels.push_back(&r);
  }
  std::sort(kernels.begin(), kernels.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  for (const Record* k : kernels) seen.ids.push_back(external.count(k->correlation_id) ? external[k->correlation_id] : 0);
  return seen;
}

}  // namespace

// The default activities trace only the launch-type runtime calls.
TEST(ExternalCorrelationGpuTest, KernelsCarryTheInnermostPushedId) {
  CUDASCOPE_REQUIRE_GPU();
  const Observed seen = trace_pushed_ids(ActivitySet::defaults());
  EXPECT_EQ(seen.ids, (std::vector<std::uint64_t>{100, 200, 0})) << seen.detail();
}

// With every runtime call traced, as Kineto does.
TEST(ExternalCorrelationGpuTest, KernelsCarryTheInnermostPushedIdWithFullApiTracing) {
  CUDASCOPE_REQUIRE_GPU();
  const Observed seen = trace_pushed_ids(ActivitySet::defaults().add(Activity::kRuntime));
  EXPECT_EQ(seen.ids, (std::vector<std::uint64_t>{100, 200, 0})) << seen.detail();
}

// A second session in one process (`cudascope trace --pid` windows, a profiler started
// twice): the launch calls and their external ids are recorded again, whatever the session
// before traced.
TEST(ExternalCorrelationGpuTest, ASecondSessionRecordsThemAgain) {
  CUDASCOPE_REQUIRE_GPU();
  for (const ActivitySet& first : {ActivitySet::defaults(), ActivitySet::defaults().add(Activity::kRuntime)}) {
    trace_pushed_ids(first);
    const Observed seen = trace_pushed_ids(ActivitySet::defaults());
    EXPECT_EQ(seen.ids, (std::vector<std::uint64_t>{100, 200, 0})) << "after " << first.to_string() << ": " << seen.detail();
    EXPECT_GE(seen.api_records, 3U) << "after " << first.to_string();
  }
}

// A metrics-only recording's sampled windows switch on only the kinds its metrics read: the
// kernels, not CUPTI's external correlation (once enabled, work kinds leave launches slower);
// a trace window (every kernel, for `cudascope trace --pid`) switches on every kind.
TEST(ExternalCorrelationGpuTest, SampledWindowsRecordKernelsWithoutExternalIdsAndTraceWindowsWithThem) {
  CUDASCOPE_REQUIRE_GPU();
  SamplingPlan whole;  // one window as long as its period: kernel records on from the start
  whole.window = whole.period = std::chrono::seconds(60);
  const Observed sampled = trace_pushed_ids(ActivitySet::defaults(), std::make_shared<KernelSampling>(whole));
  EXPECT_EQ(sampled.ids, (std::vector<std::uint64_t>{0, 0, 0})) << sampled.detail();
  EXPECT_EQ(sampled.external_records, 0U);
  auto traced = std::make_shared<KernelSampling>(whole);
  traced->request_full(true);
  const Observed full = trace_pushed_ids(ActivitySet::defaults(), traced);
  EXPECT_EQ(full.ids, (std::vector<std::uint64_t>{100, 200, 0})) << full.detail();
  traced->request_full(false);
}
