#include <cudascope/profiler/record_buffers.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

using namespace cudascope::profiler;

namespace {
Record numbered(std::uint64_t n) {
  Record r = make_record(RecordKind::kKernel);
  r.start_ns = n;
  return r;
}
}  // namespace

TEST(RecordBuffersTest, DrainsEveryThreadsRecordsInThatThreadsOrderWhileTheyWrite) {
  RecordBuffers buffers;
  constexpr int kThreads = 4;
  constexpr std::uint64_t kPerThread = 10 * RecordBuffers::kChunkRecords + 17;  // crosses chunk boundaries
  std::map<std::uint32_t, std::vector<std::uint64_t>> seen;
  std::atomic<bool> writing{true};
  const auto consume = [&](const Record* records, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) seen[records[i].thread_id].push_back(records[i].start_ns);
  };
  std::thread consumer([&] {
    while (writing.load()) buffers.drain(consume);
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&] {
      for (std::uint64_t n = 0; n < kPerThread; ++n) ASSERT_TRUE(buffers.emit(numbered(n)));
    });
  }
  for (auto& p : producers) p.join();
  writing = false;
  consumer.join();
  buffers.drain(consume);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kThreads));
  for (const auto& [thread, values] : seen) {
    ASSERT_EQ(values.size(), kPerThread) << "thread " << thread;
    for (std::uint64_t n = 0; n < kPerThread; ++n) ASSERT_EQ(values[n], n) << "thread " << thread;
  }
  EXPECT_EQ(buffers.dropped(), 0u);
}

TEST(RecordBuffersTest, DropsAndCountsOnceTheMemoryLimitIsReachedThenRecoversAfterDrain) {
  RecordBuffers buffers;
  buffers.set_memory_limit(2 * RecordBuffers::kChunkBytes);
  std::uint64_t accepted = 0;
  for (std::uint64_t n = 0; n < 3 * RecordBuffers::kChunkRecords; ++n) accepted += buffers.emit(numbered(n)) ? 1 : 0;
  EXPECT_EQ(accepted, 2 * RecordBuffers::kChunkRecords);
  EXPECT_EQ(buffers.dropped(), RecordBuffers::kChunkRecords);
  EXPECT_LE(buffers.bytes_held(), 2 * RecordBuffers::kChunkBytes);
  std::size_t drained = buffers.drain([](const Record*, std::size_t) {});
  EXPECT_EQ(drained, accepted);
  EXPECT_TRUE(buffers.emit(numbered(1))) << "drained chunks are reused";
}

TEST(RecordBuffersTest, AMultiRecordEmitStaysContiguousAcrossAChunkBoundary) {
  RecordBuffers buffers;
  for (std::size_t n = 0; n + 1 < RecordBuffers::kChunkRecords; ++n) buffers.emit(numbered(n));
  Record group[3] = {numbered(100), numbered(101), numbered(102)};
  ASSERT_TRUE(buffers.emit(group, 3));
  bool found = false;
  buffers.drain([&](const Record* records, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      if (records[i].start_ns != 100) continue;
      ASSERT_GE(count - i, 3u) << "the group was split between runs";
      EXPECT_EQ(records[i + 1].start_ns, 101u);
      EXPECT_EQ(records[i + 2].start_ns, 102u);
      found = true;
    }
  });
  EXPECT_TRUE(found);
}

TEST(RecordBuffersTest, ClaimedSlotsAreDrainedOnlyOncePublishedAndStayContiguousAcrossAChunkBoundary) {
  RecordBuffers buffers;
  for (std::size_t n = 0; n + 1 < RecordBuffers::kChunkRecords; ++n) buffers.emit(numbered(n));
  std::size_t drained = 0;
  buffers.drain([&](const Record*, std::size_t count) { drained += count; });
  const RecordBuffers::Claim slots = buffers.claim(2);  // one slot left: a fresh chunk
  ASSERT_NE(slots.records, nullptr);
  slots.records[0] = numbered(200);
  slots.records[1] = numbered(201);
  std::size_t seen_before_publish = 0;
  buffers.drain([&](const Record*, std::size_t count) { seen_before_publish += count; });
  EXPECT_EQ(seen_before_publish, 0u);
  RecordBuffers::publish(slots);
  std::vector<std::uint64_t> seen;
  buffers.drain([&](const Record* records, std::size_t count) {
    ASSERT_EQ(count, 2u);
    for (std::size_t i = 0; i < count; ++i) seen.push_back(records[i].start_ns);
  });
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{200, 201}));
  EXPECT_EQ(buffers.dropped(), 0u);
}

TEST(RecordBuffersTest, RecordsOfAThreadThatEndedAreStillDrained) {
  RecordBuffers buffers;
  std::thread([&] {
    for (int n = 0; n < 5; ++n) buffers.emit(numbered(static_cast<std::uint64_t>(n)));
  }).join();
  EXPECT_EQ(buffers.drain([](const Record*, std::size_t) {}), 5u);
  EXPECT_EQ(buffers.drain([](const Record*, std::size_t) {}), 0u);
}

TEST(RecordBuffersTest, SteadyStateReusesDrainedChunksWithoutGrowing) {
  RecordBuffers buffers;
  buffers.reserve(8 * RecordBuffers::kChunkBytes);
  const std::size_t held = buffers.bytes_held();
  for (int round = 0; round < 50; ++round) {
    for (std::uint64_t n = 0; n < 4 * RecordBuffers::kChunkRecords; ++n) ASSERT_TRUE(buffers.emit(numbered(n)));
    EXPECT_EQ(buffers.drain([](const Record*, std::size_t) {}), 4 * RecordBuffers::kChunkRecords);
  }
  EXPECT_EQ(buffers.bytes_held(), held) << "drained chunks come back; none are made in the steady state";
  EXPECT_EQ(buffers.dropped(), 0u);
}

TEST(RecordBuffersTest, RefillerKeepsTheReserveAheadOfABurstWithinTheLimit) {
  RecordBuffers buffers;
  buffers.set_memory_limit(200 * RecordBuffers::kChunkBytes);
  buffers.reserve(64 * RecordBuffers::kChunkBytes);
  buffers.start_refiller(std::chrono::milliseconds(5));
  // A burst of 150 chunks with no drain: beyond the reserve, within the limit.
  for (std::uint64_t n = 0; n < 150 * RecordBuffers::kChunkRecords; ++n) ASSERT_TRUE(buffers.emit(numbered(n)));
  EXPECT_LE(buffers.bytes_held(), buffers.memory_limit());
  // Past the limit every record is dropped and counted, none silently.
  std::uint64_t accepted = 150 * RecordBuffers::kChunkRecords;
  std::uint64_t refused = 0;
  for (std::uint64_t n = 0; n < 100 * RecordBuffers::kChunkRecords; ++n) (buffers.emit(numbered(n)) ? accepted : refused) += 1;
  buffers.stop_refiller();
  EXPECT_LE(buffers.bytes_held(), buffers.memory_limit());
  EXPECT_EQ(buffers.dropped(), refused);
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(buffers.drain([](const Record*, std::size_t) {}), accepted);
  // After the drain the pool gives back what it holds beyond its reserve.
  EXPECT_LE(buffers.free_chunks(), 64u + 3 * 21u);  // the reserve, plus partly used slabs
}
