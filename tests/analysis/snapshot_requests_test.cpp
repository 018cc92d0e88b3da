// A snapshot's trace turned into allocation requests (snapshot_requests.h): sizes, frees,
// streams, inferred empty_cache calls, and history that starts late.
#include "snapshot_test_support.h"

#include <cudascope/analysis/snapshot_requests.h>

#include <string>
#include <vector>

namespace cudascope::analysis {
namespace {

using Kind = cuda::memory::ReplayRequest::Kind;

std::string entry(const char* action, uint64_t addr, uint64_t size, uint64_t stream = 0) {
  return std::string("{\"action\":\"") + action + "\",\"addr\":" + std::to_string(addr) +
         ",\"size\":" + std::to_string(size) + ",\"stream\":" + std::to_string(stream) + ",\"time_us\":1}";
}

// A snapshot whose final state is `segments` (JSON) and whose device 0 trace is `entries`.
Snapshot snapshot_of(const std::vector<std::string>& entries, const std::string& segments = "[]",
                     const std::string& settings = "{}") {
  std::string trace;
  for (const std::string& e : entries) trace += (trace.empty() ? "" : ",") + e;
  const std::string json = "{\"segments\":" + segments + ",\"device_traces\":[[" + trace +
                           "]],\"allocator_settings\":" + settings + "}";
  auto r = load_snapshot_from_bytes(json, "crafted.json");
  if (!r) {
    ADD_FAILURE() << r.error().message();
    return Snapshot{};
  }
  return std::move(r).value();
}

const uint64_t kSeg = 0x7f0000000000;

TEST(SnapshotRequestsTest, AllocsKeepTheRequestedSizeAndFreesFollowFreeCompleted) {
  const Snapshot snap = snapshot_of({entry("segment_alloc", kSeg, 2 << 20), entry("alloc", kSeg, 1000),
                                     entry("alloc", kSeg + 1024, 700), entry("free_requested", kSeg, 1000),
                                     entry("alloc", kSeg + 2048, 300), entry("free_completed", kSeg, 1000)});
  const SnapshotRequests r = snapshot_requests(snap, 0);
  ASSERT_EQ(r.requests.size(), 4u);
  EXPECT_EQ(r.requests[0].kind, Kind::alloc);
  EXPECT_EQ(r.requests[0].size, 1000u) << "the trace's size is the request, not the 1024-byte block";
  EXPECT_EQ(r.requests[1].size, 700u);
  EXPECT_EQ(r.requests[2].size, 300u) << "the block is not reusable before free_completed";
  EXPECT_EQ(r.requests[3].kind, Kind::free);
  EXPECT_EQ(r.requests[3].id, r.requests[0].id);
  EXPECT_EQ(r.entry[3], 5u) << "each request names the trace entry it came from";
  EXPECT_TRUE(r.complete());
  EXPECT_FALSE(r.used_free_requested);
  EXPECT_FALSE(r.sizes_all_512_aligned);
}

TEST(SnapshotRequestsTest, WithoutFreeCompletedFreesAtFreeRequested) {
  const Snapshot snap = snapshot_of({entry("segment_alloc", kSeg, 2 << 20), entry("alloc", kSeg, 512),
                                     entry("free_requested", kSeg, 512), entry("alloc", kSeg, 1024)});
  const SnapshotRequests r = snapshot_requests(snap, 0);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[1].kind, Kind::free);
  EXPECT_TRUE(r.used_free_requested);
  EXPECT_TRUE(r.sizes_all_512_aligned) << "sizes that may be block sizes are flagged";
}

TEST(SnapshotRequestsTest, StreamsGetIndicesInOrderOfFirstUse) {
  const Snapshot snap = snapshot_of({entry("alloc", kSeg, 100, 77), entry("alloc", kSeg + 512, 100, 5),
                                     entry("alloc", kSeg + 1024, 100, 77)},
                                    "[{\"device\":0,\"address\":" + std::to_string(kSeg) +
                                        ",\"total_size\":2097152,\"stream\":77,\"segment_type\":\"small\","
                                        "\"is_expandable\":false,\"blocks\":[]}]");
  const SnapshotRequests r = snapshot_requests(snap, 0);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[0].stream, 0);
  EXPECT_EQ(r.requests[1].stream, 1);
  EXPECT_EQ(r.requests[2].stream, 0);
  EXPECT_EQ(r.streams, 2u);
}

TEST(SnapshotRequestsTest, SegmentReleasesOutsideAMallocBecomeEmptyCache) {
  const Snapshot snap = snapshot_of({
      entry("segment_alloc", kSeg, 2 << 20), entry("segment_alloc", kSeg + (4 << 20), 20 << 20),
      entry("alloc", kSeg, 512), entry("free_completed", kSeg, 512),
      // empty_cache(): a release that no segment_alloc, segment_map or oom follows
      entry("segment_free", kSeg, 2 << 20),
      entry("alloc", kSeg + (4 << 20), 4 << 20), entry("free_completed", kSeg + (4 << 20), 4 << 20),
      // a malloc's retry: releases then a segment_alloc
      entry("segment_free", kSeg + (4 << 20), 20 << 20), entry("segment_alloc", kSeg + (8 << 20), 20 << 20),
      entry("alloc", kSeg + (8 << 20), 12 << 20),
      // an OOM path: releases then the oom entry
      entry("segment_alloc", kSeg, 2 << 20), entry("alloc", kSeg, 512), entry("free_completed", kSeg, 512),
      entry("segment_free", kSeg, 2 << 20), entry("oom", 0, 1 << 30)});
  const SnapshotRequests r = snapshot_requests(snap, 0);
  size_t empties = 0;
  for (const auto& q : r.requests) empties += q.kind == Kind::empty_cache;
  EXPECT_EQ(empties, 1u);
  EXPECT_EQ(r.empty_cache_calls, 1u);
  EXPECT_EQ(r.requests[2].kind, Kind::empty_cache);
  EXPECT_TRUE(r.complete());
}

TEST(SnapshotRequestsTest, BlocksLiveBeforeTheTraceAreAllocatedFirstInAddressOrder) {
  // Final state: one segment with a block allocated before the trace (never freed) and the
  // trace frees another block it never allocated.
  const std::string segments = "[{\"device\":0,\"address\":" + std::to_string(kSeg) +
                               ",\"total_size\":2097152,\"stream\":0,\"segment_type\":\"small\",\"is_expandable\":false,"
                               "\"blocks\":[{\"address\":" + std::to_string(kSeg) +
                               ",\"size\":1024,\"requested_size\":1000,\"state\":\"active_allocated\"},"
                               "{\"address\":" + std::to_string(kSeg + 1024) +
                               ",\"size\":2096128,\"requested_size\":0,\"state\":\"inactive\"}]}]";
  const Snapshot snap =
      snapshot_of({entry("free_requested", kSeg + 4096, 3000), entry("free_completed", kSeg + 4096, 3000),
                   entry("alloc", kSeg + 8192, 100), entry("free_completed", kSeg + 8192, 100)},
                  segments);
  const SnapshotRequests r = snapshot_requests(snap, 0);
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.live_at_start, 2u);
  EXPECT_EQ(r.live_at_start_bytes, 4000u);
  EXPECT_EQ(r.segments_before_trace, 1u) << "the final segment was never allocated in the trace";
  ASSERT_GE(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[0].size, 1000u) << "lowest address first, at its requested size";
  EXPECT_EQ(r.requests[1].size, 3000u);
  EXPECT_EQ(r.entry[0], SnapshotRequests::kBeforeTrace);
  EXPECT_EQ(r.requests[2].kind, Kind::free);
  EXPECT_EQ(r.requests[2].id, r.requests[1].id) << "the trace's free releases the assumed block";
}

TEST(SnapshotRequestsTest, OwnSettingsComeFromTheRecordedFields) {
  const Snapshot text = snapshot_of({entry("alloc", kSeg, 512)}, "[]",
                                    "{\"PYTORCH_CUDA_ALLOC_CONF\":\"expandable_segments:True\"}");
  EXPECT_EQ(snapshot_alloc_conf(text), "expandable_segments:True");
  const Snapshot fields = snapshot_of({entry("alloc", kSeg, 512)}, "[]",
                                      "{\"PYTORCH_CUDA_ALLOC_CONF\":\"\",\"max_split_size\":134217728,"
                                      "\"garbage_collection_threshold\":0.0,\"expandable_segments\":false}");
  EXPECT_EQ(snapshot_alloc_conf(fields), "max_split_size_mb:128");
  EXPECT_EQ(snapshot_alloc_conf(snapshot_of({entry("alloc", kSeg, 512)})), "");
}

TEST(SnapshotRequestsTest, RealPyTorchTraceConvertsWholly) {
  const Snapshot snap = testing::load_fixture("snap_transformer_p4.pickle.gz");
  const SnapshotRequests r = snapshot_requests(snap, busiest_device(snap));
  size_t allocs = 0, frees = 0;
  for (const auto& q : r.requests) (q.kind == Kind::alloc ? allocs : frees) += 1;
  size_t trace_allocs = 0, trace_frees = 0;
  const DeviceTrace d = snap.device_trace(r.device);
  for (uint32_t i = d.begin; i < d.end; ++i) {
    trace_allocs += snap.trace[i].action == Action::alloc;
    trace_frees += snap.trace[i].action == Action::free_completed;
  }
  EXPECT_EQ(allocs, trace_allocs);
  EXPECT_EQ(frees, trace_frees);
  EXPECT_TRUE(r.complete()) << "recorded from the program's start";
  EXPECT_EQ(r.mismatched_entries, 0u);
  EXPECT_THROW(snapshot_requests(snap, 5), std::runtime_error);
}

}  // namespace
}  // namespace cudascope::analysis
