// The CUPTI launch callback's NCCL part (cupti_source.h: record_nccl_launch), called with
// fabricated callback data as CUPTI calls it around a driver launch: a launch inside an NCCL
// range naming a communicator becomes a driver API record inside the range, any other none.
#include "cupti_source.h"
#include "nccl_nvtx_support.h"

#include <cudascope/profiler/record.h>
#include <cudascope/profiler/session.h>
#include <cudascope/profiler/trace_sink.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

using namespace cudascope::profiler;
using namespace cudascope::profiler::testing;

namespace {

// One driver launch as CUPTI reports it: the entry callback, then the exit callback with the
// same per-call slot.
void launch(std::uint32_t correlation) {
  std::uint64_t slot = 0;
  CUresult result = CUDA_SUCCESS;
  CUpti_CallbackData call{};
  call.functionName = "cuLaunchKernelEx";
  call.correlationId = correlation;
  call.correlationData = &slot;
  call.callbackSite = CUPTI_API_ENTER;
  detail::record_nccl_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, call);
  call.callbackSite = CUPTI_API_EXIT;
  call.functionReturnValue = &result;
  detail::record_nccl_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, call);
}

// Each test runs in its own process (gtest_discover_tests): the handlers installed here
// replace no other test's NVTX.
TEST(NcclLaunchRecordTest, OnlyALaunchInsideAnNcclRangeNamingACommunicatorIsRecordedThere) {
  FakeNvtxInstance nvtx;
  ASSERT_TRUE(nvtx.install());
  SessionOptions options;
  options.source = SourceKind::kSim;
  options.flush_interval = std::chrono::milliseconds(20);
  Session session(options);
  session.start();
  const nvtxDomainHandle_t nccl = nvtx.create_domain("NCCL");
  const AllReducePayload payload{0x1234abcd, 4096, 0};
  NcclAttributes all_reduce(kAllReduceSchema, &payload, sizeof payload);
  const OldAllReducePayload old{4096, 0};
  NcclAttributes before_2_25(kAllReduceSchema, &old, sizeof old);

  launch(10);  // a launch of the program's own
  nvtx.push(nccl, all_reduce.attributes);
  launch(11);  // NCCL's, inside its call
  nvtx.pop(nccl);
  launch(12);
  nvtx.push(nccl, before_2_25.attributes);
  launch(13);  // inside a range naming no communicator
  nvtx.pop(nccl);
  session.stop();

  MemorySink sink;
  session.export_to(sink);
  std::vector<Record> launches, ranges;
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kDriverApi) launches.push_back(r);
    if (r.kind == RecordKind::kNvtxPush || r.kind == RecordKind::kNvtxPop) ranges.push_back(r);
  }
  ASSERT_EQ(launches.size(), 1u);
  const Record& l = launches[0];
  EXPECT_EQ(l.correlation_id, 11u) << "the kernel's correlation id: how the analysis joins them";
  EXPECT_EQ(std::string(l.u.api.name), "cuLaunchKernelEx");
  EXPECT_EQ(l.u.api.callback_id, static_cast<std::uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
  EXPECT_EQ(l.u.api.return_value, 0);
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_LE(ranges[0].start_ns, l.start_ns) << "inside the range";
  EXPECT_LE(l.start_ns, l.end_ns);
  EXPECT_LE(l.end_ns, ranges[1].start_ns) << "inside the range";
  EXPECT_EQ(l.thread_id, ranges[0].thread_id) << "on the range's thread";
}

}  // namespace
