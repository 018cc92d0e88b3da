// LazyTraceSink: the trace file of a recorded process opens on its first record of CUDA or
// NVTX use, never for a process with only descriptions, and then holds everything as if it
// had been open from the start.
#include "lazy_trace_sink.h"

#include <cudascope/profiler/record.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace {

using cudascope::inject::LazyTraceSink;
using cudascope::inject::shows_cuda_or_nvtx_use;
using cudascope::profiler::make_record;
using cudascope::profiler::MemorySink;
using cudascope::profiler::Record;
using cudascope::profiler::RecordKind;
using cudascope::profiler::TraceInfo;
using cudascope::profiler::TraceSummary;

// A MemorySink the test keeps watching after handing it to the lazy sink.
struct Opened {
  int opens = 0;
  MemorySink* sink = nullptr;
  LazyTraceSink::Opener opener() {
    return [this] {
      ++opens;
      auto memory = std::make_unique<MemorySink>();
      sink = memory.get();
      return memory;
    };
  }
};

Record at(RecordKind kind, std::uint64_t ns) {
  Record r = make_record(kind);
  r.start_ns = r.end_ns = ns;
  return r;
}

std::vector<RecordKind> kinds(const std::vector<Record>& records) {
  std::vector<RecordKind> out;
  for (const Record& r : records) out.push_back(r.kind);
  return out;
}

TEST(LazyTraceSinkTest, DescriptionsAloneNeverOpenTheTrace) {
  Opened opened;
  LazyTraceSink lazy(opened.opener());
  TraceInfo info;
  info.process_name = "torchrun";
  lazy.begin(info);
  for (RecordKind kind : {RecordKind::kDevice, RecordKind::kContext, RecordKind::kStream, RecordKind::kThreadName,
                          RecordKind::kOverhead, RecordKind::kExternalCorrelation}) {
    const Record r = at(kind, 1);
    lazy.write(&r, 1);
    lazy.flush();
  }
  lazy.end(TraceSummary{});
  EXPECT_EQ(opened.opens, 0);
  EXPECT_FALSE(lazy.opened());
  EXPECT_EQ(lazy.events_written(), 0u);
}

TEST(LazyTraceSinkTest, FirstUseOpensTheTraceWithTheHeaderAndTheHeldRecordsFirst) {
  Opened opened;
  LazyTraceSink lazy(opened.opener());
  TraceInfo info;
  info.process_name = "worker";
  info.rank = 1;
  lazy.begin(info);
  const Record device = at(RecordKind::kDevice, 1);
  const Record stream = at(RecordKind::kStream, 2);
  lazy.write(&device, 1);
  lazy.write(&stream, 1);
  lazy.flush();
  ASSERT_EQ(opened.opens, 0);
  const Record batch[] = {at(RecordKind::kThreadName, 3), at(RecordKind::kKernel, 4)};
  lazy.write(batch, 2);
  ASSERT_EQ(opened.opens, 1);
  EXPECT_TRUE(lazy.opened());
  const Record copy = at(RecordKind::kMemcpy, 5);
  lazy.write(&copy, 1);
  TraceSummary summary;
  summary.records = 5;
  lazy.end(summary);
  EXPECT_EQ(opened.opens, 1) << "opened once";
  EXPECT_EQ(opened.sink->info().process_name, "worker");
  EXPECT_EQ(opened.sink->info().rank, 1);
  EXPECT_EQ(kinds(opened.sink->records()), (std::vector<RecordKind>{RecordKind::kDevice, RecordKind::kStream,
                                                                      RecordKind::kThreadName, RecordKind::kKernel,
                                                                      RecordKind::kMemcpy}));
  EXPECT_EQ(opened.sink->summary().records, 5u);
}

TEST(LazyTraceSinkTest, NvtxApiCallsMemoryAndDropsCountAsUseDescriptionsDoNot) {
  for (RecordKind kind : {RecordKind::kKernel, RecordKind::kMemcpy, RecordKind::kMemset, RecordKind::kSync,
                          RecordKind::kRuntimeApi, RecordKind::kDriverApi, RecordKind::kNvtxPush, RecordKind::kNvtxPop,
                          RecordKind::kNvtxMark, RecordKind::kNvtxRangeStart, RecordKind::kNvtxRangeEnd,
                          RecordKind::kAllocator, RecordKind::kDeviceMemory, RecordKind::kEventTiming,
                          RecordKind::kDropped}) {
    EXPECT_TRUE(shows_cuda_or_nvtx_use(make_record(kind))) << static_cast<int>(kind);
  }
  for (RecordKind kind : {RecordKind::kDevice, RecordKind::kContext, RecordKind::kStream, RecordKind::kThreadName,
                          RecordKind::kOverhead, RecordKind::kExternalCorrelation, RecordKind::kText}) {
    EXPECT_FALSE(shows_cuda_or_nvtx_use(make_record(kind))) << static_cast<int>(kind);
  }
}

TEST(LazyTraceSinkTest, DescriptionsBeyondTheBoundOpenTheTraceRatherThanGrowWithoutEnd) {
  Opened opened;
  LazyTraceSink lazy(opened.opener());
  lazy.begin(TraceInfo{});
  const std::vector<Record> many(LazyTraceSink::kMaxHeldRecords, at(RecordKind::kOverhead, 1));
  lazy.write(many.data(), many.size());
  EXPECT_EQ(opened.opens, 0) << "up to the bound, held";
  const Record one_more = at(RecordKind::kOverhead, 2);
  lazy.write(&one_more, 1);
  ASSERT_EQ(opened.opens, 1);
  EXPECT_EQ(opened.sink->records().size(), LazyTraceSink::kMaxHeldRecords + 1) << "nothing held is lost";
}

TEST(LazyTraceSinkTest, AnOpenerThatFailsLeavesTheProcessUnrecordedToAFile) {
  int opens = 0;
  LazyTraceSink lazy([&opens]() -> std::unique_ptr<cudascope::profiler::TraceSink> {
    ++opens;
    throw std::runtime_error("cannot create 't.json': Permission denied");
  });
  lazy.begin(TraceInfo{});
  const Record kernel = at(RecordKind::kKernel, 1);
  // The failure passes out of the write that opened, for the GuardedSink around it to report.
  EXPECT_THAT([&] { lazy.write(&kernel, 1); },
              ::testing::ThrowsMessage<std::runtime_error>(::testing::HasSubstr("cannot create 't.json'")));
  lazy.write(&kernel, 1);
  lazy.flush();
  lazy.end(TraceSummary{});
  EXPECT_EQ(opens, 1) << "tried once, not on every record";
  EXPECT_FALSE(lazy.opened());
}

}  // namespace
