// External correlation ids through CUPTI on a real GPU: the kernels launched between push
// and pop are tied to the pushed id, nested ids to the innermost, none after the pop.
// (Elsewhere push/pop are no-ops: the sim records no external ids, so this needs a GPU.)
#include "test_support.h"

#include <cudascope/profiler/external_correlation.h>
#include <cudascope/profiler/session.h>

#include <algorithm>
#include <map>

using namespace cudascope;
using namespace cudascope::profiler;

TEST(ExternalCorrelationGpuTest, KernelsCarryTheInnermostPushedId) {
  CUDASCOPE_REQUIRE_GPU();
  // The first launch of a process loads the module and creates the context: keep it out of
  // the recording (this test failed once in a cold process on an H100 and passed when run
  // again in the same machine; the launch below makes both runs alike).
  cuda::Stream stream(0);
  cuda::busy_wait(std::chrono::microseconds(1), stream);
  stream.synchronize();
  SessionOptions options;
  options.source = SourceKind::kCupti;
  Session session(options);
  session.start();
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
  std::map<std::uint32_t, std::uint64_t> external;  // correlation id -> external id
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kExternalCorrelation) external[r.correlation_id] = r.u.external.external_id;
  }
  std::vector<std::uint64_t> ids;  // per kernel in launch order; 0 for none
  std::vector<const Record*> kernels;
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kKernel) kernels.push_back(&r);
  }
  std::sort(kernels.begin(), kernels.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
  for (const Record* k : kernels) ids.push_back(external.count(k->correlation_id) ? external[k->correlation_id] : 0);
  EXPECT_EQ(ids, (std::vector<std::uint64_t>{100, 200, 0}));
}
