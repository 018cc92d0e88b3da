// The CUPTI source on a real GPU: the same behaviours the sim tests check, as CUPTI reports them.
#include "test_support.h"

#include <cudascope/profiler/session.h>

#include <map>

using namespace cudascope;
using namespace cudascope::profiler;

TEST(ProfilerGpuTest, CuptiRecordsTheSpinKernelsWithTheirLaunchesOnOneTimeline) {
  CUDASCOPE_REQUIRE_GPU();
  SessionOptions options;
  options.source = SourceKind::kCupti;
  Session session(options);
  session.start();
  cuda::Stream stream(0);
  for (int i = 0; i < 10; ++i) cuda::busy_wait(std::chrono::microseconds(50), stream);
  stream.synchronize();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  std::map<std::uint32_t, const Record*> launches;
  int kernels = 0;
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kRuntimeApi) launches[r.correlation_id] = &r;
  }
  for (const Record& r : sink.records()) {
    if (r.kind != RecordKind::kKernel) continue;
    ++kernels;
    EXPECT_NE(std::string(r.u.kernel.name).find("cudascope_spin_kernel"), std::string::npos) << r.u.kernel.name;
    EXPECT_GE(r.end_ns - r.start_ns, 50000u);
    ASSERT_TRUE(launches.count(r.correlation_id));
    EXPECT_LE(launches[r.correlation_id]->start_ns, r.start_ns) << "CUPTI's clock is the host's";
    EXPECT_EQ(r.u.kernel.grid[0], 1);
  }
  EXPECT_EQ(kernels, 10);
  EXPECT_EQ(sink.summary().dropped_cupti, 0u);
}
