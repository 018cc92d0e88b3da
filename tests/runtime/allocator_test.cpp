// The caching allocator's behaviours, on the current backend (sim by default).
#include "allocator_test_util.h"
#include "backend/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

namespace cudascope::testing {
namespace {

using cuda::memory_stats;
constexpr std::size_t kMiB = 1 << 20;

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuda::detail::alloc::live_allocations(0), 0u) << "a previous test leaked an allocation";
    fresh_allocator();
  }
  void TearDown() override { fresh_allocator(); }
};

TEST(AllocatorConfigTest, ParsesEveryKey) {
  const auto c = cuda::AllocatorConfig::parse(
      "max_split_size_mb:128, roundup_power2_divisions:4,garbage_collection_threshold:0.6,"
      "expandable_segments:True,max_non_split_rounding_mb:64,release_lock_on_cudamalloc:True");
  EXPECT_EQ(c.max_split_size, 128 * kMiB);
  EXPECT_EQ(c.max_non_split_rounding_size, 64 * kMiB);
  EXPECT_DOUBLE_EQ(c.garbage_collection_threshold, 0.6);
  EXPECT_TRUE(c.expandable_segments);
  EXPECT_TRUE(c.release_lock_on_cudamalloc);
  for (auto d : c.roundup_power2_divisions) EXPECT_EQ(d, 4u);
}

TEST(AllocatorConfigTest, BucketListFollowsPyTorchsFillRules) {
  // The first entry also covers smaller intervals; '>' covers every interval after the last
  // named one (the replays recorded with PyTorch 2.11 confirm it).
  const auto c = cuda::AllocatorConfig::parse("roundup_power2_divisions:[64:8,256:4,>:1]");
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(c.roundup_power2_divisions[i], 8u) << i;
  EXPECT_EQ(c.roundup_power2_divisions[6], 8u);
  EXPECT_EQ(c.roundup_power2_divisions[7], 0u);
  EXPECT_EQ(c.roundup_power2_divisions[8], 4u);
  for (std::size_t i = 9; i < 16; ++i) EXPECT_EQ(c.roundup_power2_divisions[i], 1u) << i;
  EXPECT_EQ(c.divisions_for(100 * kMiB), 8u);  // [64 MiB, 128 MiB)
  EXPECT_EQ(c.divisions_for(300 * kMiB), 4u);  // [256 MiB, 512 MiB)
  EXPECT_EQ(c.divisions_for(512), 8u);
}

TEST(AllocatorConfigTest, BadKeyOrValueNamesBoth) {
  try {
    cuda::AllocatorConfig::parse("max_split_size_mb:abc", "PYTORCH_CUDA_ALLOC_CONF");
    FAIL() << "no error";
  } catch (const cuda::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("PYTORCH_CUDA_ALLOC_CONF"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("max_split_size_mb"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("abc"));
  }
  EXPECT_THAT([] { cuda::AllocatorConfig::parse("bogus_key:1"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("bogus_key")));
  EXPECT_THAT([] { cuda::AllocatorConfig::parse("expandable_segments:yes"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("'yes'")));
  EXPECT_THROW(cuda::AllocatorConfig::parse("max_split_size_mb:10"), cuda::Error);  // below 20 MB
  EXPECT_THROW(cuda::AllocatorConfig::parse("garbage_collection_threshold:1.5"), cuda::Error);
  EXPECT_THROW(cuda::AllocatorConfig::parse("roundup_power2_divisions:3"), cuda::Error);
}

TEST(AllocatorConfigTest, ParsesThePinnedKeysAsPyTorch211) {
  const auto c = cuda::AllocatorConfig::parse(
      "pinned_use_cuda_host_register:True,pinned_num_register_threads:8,pinned_use_background_threads:True,"
      "pinned_reserve_segment_size_mb:64");
  EXPECT_TRUE(c.pinned_use_cuda_host_register);
  EXPECT_EQ(c.pinned_num_register_threads, 8u);
  EXPECT_TRUE(c.pinned_use_background_threads);
  EXPECT_EQ(c.pinned_reserve_segment_size, 64 * kMiB);
  EXPECT_TRUE(cuda::AllocatorConfig::parse("pinned_use_hip_host_register:True").pinned_use_cuda_host_register);
  const auto defaults = cuda::AllocatorConfig::parse("");
  EXPECT_FALSE(defaults.pinned_use_cuda_host_register);
  EXPECT_EQ(defaults.pinned_num_register_threads, 1u);
  EXPECT_EQ(defaults.pinned_reserve_segment_size, 0u);
}

TEST(AllocatorConfigTest, BadPinnedValuesNameKeyAndValue) {
  const auto rejects = [](const std::string& text, const std::string& key, const std::string& value) {
    try {
      cuda::AllocatorConfig::parse(text);
      ADD_FAILURE() << text << ": no error";
    } catch (const cuda::Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("key '" + key + "' value '" + value + "'")) << text;
    }
  };
  rejects("pinned_num_register_threads:3", "pinned_num_register_threads", "3");      // not a power of 2
  rejects("pinned_num_register_threads:256", "pinned_num_register_threads", "256");  // above 128
  rejects("pinned_reserve_segment_size_mb:0", "pinned_reserve_segment_size_mb", "0");
  rejects("pinned_reserve_segment_size_mb:-4", "pinned_reserve_segment_size_mb", "-4");
  rejects("pinned_use_cuda_host_register:1", "pinned_use_cuda_host_register", "1");
  rejects("release_lock_on_cudamalloc:yes", "release_lock_on_cudamalloc", "yes");
}

// release_lock_on_cudamalloc: while one thread's cudaMalloc runs (400 ms on the sim here),
// another thread's allocator call on the same device either completes at once, seeing no
// segment yet (lock released), or waits for the lock and sees the new segment (lock held).
int release_lock_child(int, char**) {
  std::thread first([] { cuda::caching_allocator_delete(cuda::caching_allocator_alloc(64 * kMiB)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the first thread is in cudaMalloc now
  const auto stats = cuda::memory_stats(0);                     // takes the device lock
  first.join();
  std::printf("segments seen: %lld\n", static_cast<long long>(stats.at("num_device_alloc")));
  return 0;
}
const ChildModeRegistrar release_lock_mode("--release-lock-child", release_lock_child);

TEST(AllocatorConfigTest, ReleaseLockOnCudaMallocLetsOtherThreadsIn) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "needs the sim's modelled cudaMalloc latency";
  const auto on = run_self({"--release-lock-child"}, {"CUDASCOPE_SIM_MALLOC_LATENCY=400ms",
                                                      "CUDASCOPE_ALLOC_CONF=release_lock_on_cudamalloc:True"});
  EXPECT_EQ(on.exit_code, 0) << on.output;
  EXPECT_THAT(on.output, ::testing::HasSubstr("segments seen: 0"));  // answered during cudaMalloc
  const auto off = run_self({"--release-lock-child"}, {"CUDASCOPE_SIM_MALLOC_LATENCY=400ms",
                                                       "CUDASCOPE_ALLOC_CONF=release_lock_on_cudamalloc:False"});
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THAT(off.output, ::testing::HasSubstr("segments seen: 1"));  // waited for it
}

TEST_F(AllocatorTest, SmallRequestsShareTwoMiBSegmentsRoundedTo512Bytes) {
  void* a = cuda::caching_allocator_alloc(1000);
  void* b = cuda::caching_allocator_alloc(1);
  auto s = memory_stats();
  EXPECT_EQ(s["allocated_bytes.small_pool.current"], 1024 + 512);
  EXPECT_EQ(s["requested_bytes.small_pool.current"], 1001);
  EXPECT_EQ(s["reserved_bytes.small_pool.current"], static_cast<std::int64_t>(2 * kMiB));
  EXPECT_EQ(s["segment.small_pool.current"], 1);
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 1024);  // split from the same segment
  cuda::caching_allocator_delete(a);
  cuda::caching_allocator_delete(b);
  s = memory_stats();
  EXPECT_EQ(s["allocated_bytes.all.current"], 0);
  EXPECT_EQ(s["inactive_split.all.current"], 0);  // merged back into one block
  EXPECT_EQ(s["reserved_bytes.all.current"], static_cast<std::int64_t>(2 * kMiB));
}

TEST_F(AllocatorTest, MediumRequestsSplitTwentyMiBSegmentsLargeOnesGetTheirOwn) {
  void* big = cuda::caching_allocator_alloc(11 * kMiB + 1);  // its own 12 MiB segment, unsplit
  void* medium = cuda::caching_allocator_alloc(3 * kMiB);    // splits a new 20 MiB segment
  auto s = memory_stats();
  EXPECT_EQ(s["reserved_bytes.large_pool.current"], static_cast<std::int64_t>(20 * kMiB + 12 * kMiB));
  EXPECT_EQ(s["inactive_split.large_pool.current"], 1);  // the 17 MiB remainder
  EXPECT_EQ(s["inactive_split_bytes.large_pool.current"], static_cast<std::int64_t>(17 * kMiB));
  cuda::caching_allocator_delete(medium);
  cuda::caching_allocator_delete(big);
  cuda::empty_cache();
  s = memory_stats();
  EXPECT_EQ(s["reserved_bytes.all.current"], 0);
  EXPECT_EQ(s["num_device_free"], 2);
  EXPECT_EQ(s["num_sync_all_streams"], 1);
}

TEST_F(AllocatorTest, FreedBlocksAreReusedOnlyOnTheirStream) {
  cuda::Stream side(0);
  void* a = cuda::caching_allocator_alloc(4096);
  cuda::caching_allocator_delete(a);
  void* b = cuda::caching_allocator_alloc(4096, 0, side);
  EXPECT_NE(a, b);
  void* c = cuda::caching_allocator_alloc(4096);
  EXPECT_EQ(a, c);
  EXPECT_EQ(memory_stats()["segment.all.current"], 2);
  auto per_stream = cuda::memory_stats_per_stream(0);
  EXPECT_EQ(per_stream[side.id()]["allocated_bytes.current"], 4096);
  EXPECT_EQ(per_stream[0]["segment.current"], 1);
  cuda::caching_allocator_delete(b);
  cuda::caching_allocator_delete(c);
}

TEST_F(AllocatorTest, MaxSplitSizeKeepsOversizeBlocksWhole) {
  cuda::memory::set_allocator_settings("max_split_size_mb:32");
  void* a = cuda::caching_allocator_alloc(40 * kMiB);
  auto s = memory_stats();
  EXPECT_EQ(s["oversize_allocations.current"], 1);
  EXPECT_EQ(s["oversize_segments.current"], 1);
  EXPECT_EQ(s["max_split_size"], static_cast<std::int64_t>(32 * kMiB));
  cuda::caching_allocator_delete(a);
  void* small = cuda::caching_allocator_alloc(4 * kMiB);  // may not use the oversize block
  EXPECT_NE(small, a);
  void* again = cuda::caching_allocator_alloc(39 * kMiB);  // within 20 MiB of it: reused whole
  EXPECT_EQ(again, a);
  EXPECT_EQ(memory_stats()["inactive_split.large_pool.current"], 1);  // only the 4 MiB one's remainder
  cuda::caching_allocator_delete(small);
  cuda::caching_allocator_delete(again);
}

TEST_F(AllocatorTest, RoundupPowerTwoDivisions) {
  cuda::memory::set_allocator_settings("roundup_power2_divisions:4");
  void* a = cuda::caching_allocator_alloc(1200 * 1024);  // between 1 and 2 MiB: 1.25 MiB
  EXPECT_EQ(memory_stats()["allocated_bytes.all.current"], 1280 * 1024);
  cuda::caching_allocator_delete(a);
}

TEST_F(AllocatorTest, RecordStreamDelaysReuseUntilTheStreamsWorkIsDone) {
  cuda::Stream side(0);
  void* a = cuda::caching_allocator_alloc(8192);
  cuda::busy_wait(std::chrono::milliseconds(200), side);
  cuda::record_stream(a, side);
  cuda::caching_allocator_delete(a);
  auto s = memory_stats();
  EXPECT_EQ(s["allocation.all.current"], 0);
  EXPECT_EQ(s["active.all.current"], 1);  // pending its event
  void* b = cuda::caching_allocator_alloc(8192);
  EXPECT_NE(a, b);
  side.synchronize();
  cuda::caching_allocator_delete(b);
  void* c = cuda::caching_allocator_alloc(8192);  // events processed: the first block is back
  EXPECT_EQ(c, a);
  EXPECT_EQ(memory_stats()["active.all.current"], 1);
  cuda::caching_allocator_delete(c);
  EXPECT_EQ(cuda::detail::alloc::check_invariants(0), "");
}

TEST_F(AllocatorTest, OutOfMemoryReportsTheAllocatorsStateAndChangesNothing) {
  const auto total = cuda::mem_get_info(0).second;
  cuda::set_per_process_memory_fraction(static_cast<double>(64 * kMiB) / static_cast<double>(total));
  void* a = cuda::caching_allocator_alloc(30 * kMiB);
  const auto before = memory_stats();
  try {
    cuda::caching_allocator_alloc(60 * kMiB);
    FAIL() << "no OutOfMemoryError";
  } catch (const cuda::OutOfMemoryError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("Tried to allocate 60.00 MiB"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("allowed"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("30.00 MiB is allocated"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("largest free cached block"));
  }
  auto after = memory_stats();
  EXPECT_EQ(after["num_ooms"], 1);
  EXPECT_EQ(after["num_alloc_retries"], 1);
  EXPECT_EQ(after["allocated_bytes.all.current"], before.at("allocated_bytes.all.current"));
  cuda::caching_allocator_delete(a);
}

TEST_F(AllocatorTest, OomSnapshotIsDumpedWhenAsked) {
  const std::string path = ::testing::TempDir() + "cudascope_oom.json";
  std::remove(path.c_str());
  setenv("CUDASCOPE_OOM_SNAPSHOT", path.c_str(), 1);
  cuda::set_per_process_memory_limit(4 * kMiB, 0);
  EXPECT_THROW(cuda::caching_allocator_alloc(8 * kMiB), cuda::OutOfMemoryError);
  unsetenv("CUDASCOPE_OOM_SNAPSHOT");
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(text, ::testing::StartsWith("{\"segments\":"));
}

TEST_F(AllocatorTest, BadFreesAreErrorsThatChangeNothing) {
  void* a = cuda::caching_allocator_alloc(4096);
  void* b = cuda::caching_allocator_alloc(4096);
  cuda::caching_allocator_delete(a);
  const auto before = memory_stats();
  EXPECT_THAT([&] { cuda::caching_allocator_delete(a); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("double free")));
  int host = 0;
  EXPECT_THAT([&] { cuda::caching_allocator_delete(&host); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("foreign pointer")));
  EXPECT_THAT([&] { cuda::caching_allocator_delete(static_cast<char*>(b) + 16); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("inside a block")));
  // A free on the wrong device: public_api_test, which needs (and skips without) a second one.
  EXPECT_EQ(memory_stats(), before);
  EXPECT_EQ(cuda::detail::alloc::check_invariants(0), "");
  cuda::caching_allocator_delete(b, 0);
}

TEST_F(AllocatorTest, ExpandableSegmentsGrowOneSegmentPerStream) {
  cuda::memory::set_allocator_settings("expandable_segments:True");
  void* a = cuda::caching_allocator_alloc(30 * kMiB);
  void* b = cuda::caching_allocator_alloc(30 * kMiB);
  EXPECT_EQ(static_cast<char*>(b), static_cast<char*>(a) + 30 * kMiB);  // contiguous in one segment
  auto s = memory_stats();
  EXPECT_EQ(s["reserved_bytes.large_pool.current"], static_cast<std::int64_t>(60 * kMiB));  // 20 MiB pages
  EXPECT_EQ(s["segment.large_pool.current"], 0);  // PyTorch counts mapped pages, not segments
  const auto snap = cuda::memory::memory_snapshot();
  ASSERT_EQ(snap.segments.size(), 1u);
  EXPECT_TRUE(snap.segments[0].is_expandable);
  EXPECT_EQ(snap.segments[0].total_size, 60 * kMiB);
  cuda::caching_allocator_delete(a);
  cuda::caching_allocator_delete(b);
  cuda::empty_cache();
  EXPECT_EQ(memory_stats()["reserved_bytes.all.current"], 0);
  EXPECT_EQ(cuda::detail::alloc::check_invariants(0), "");
}

TEST_F(AllocatorTest, GarbageCollectionFreesOldBlocksUnderAMemoryFraction) {
  cuda::memory::set_allocator_settings("garbage_collection_threshold:0.5");
  cuda::set_per_process_memory_limit(180 * kMiB, 0);
  for (int i = 0; i < 4; ++i) cuda::caching_allocator_delete(cuda::caching_allocator_alloc((22 + 2 * i) * kMiB));
  EXPECT_EQ(memory_stats()["num_device_free"], 0);
  void* big = cuda::caching_allocator_alloc(90 * kMiB);  // over the threshold: old blocks go
  EXPECT_GT(memory_stats()["num_device_free"], 0);
  cuda::caching_allocator_delete(big);
}

TEST_F(AllocatorTest, SummaryMatchesPyTorchsLayout) {
  const auto stats = read_stats_json(data_path("torch_memory_stats.json"));
  ASSERT_EQ(stats.size(), 122u);
  std::ifstream in(data_path("torch_memory_summary.txt"));
  std::string expected((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(cuda::format_memory_summary(stats, 0, false), expected);
}

TEST_F(AllocatorTest, MemoryStatsHasPyTorchsKeys) {
  const auto reference = read_stats_json(data_path("torch_memory_stats.json"));
  const auto ours = memory_stats();
  ASSERT_EQ(ours.size(), reference.size());
  for (const auto& [key, value] : reference) EXPECT_TRUE(ours.count(key)) << key;
  EXPECT_EQ(cuda::memory_allocated(), ours.at("allocated_bytes.all.current"));
  EXPECT_EQ(cuda::max_memory_reserved(), ours.at("reserved_bytes.all.peak"));
}

TEST_F(AllocatorTest, HistoryRecordsActionsWithNvtxAndStacks) {
  cuda::memory::record_memory_history("all", "all", "all", 4);
  void* a = nullptr;
  {
    cuda::nvtx::Range outer("step");
    cuda::nvtx::Range inner("forward");
    a = cuda::caching_allocator_alloc(4096);
  }
  auto snap = cuda::memory::memory_snapshot();
  ASSERT_FALSE(snap.device_traces.empty());
  const auto& trace = snap.device_traces[0];
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace[0].action, "segment_alloc");
  EXPECT_EQ(trace[1].action, "alloc");
  EXPECT_EQ(trace[1].user_metadata, "step;forward");
  EXPECT_FALSE(trace[1].frames.empty());
  cuda::caching_allocator_delete(a);
  for (int i = 0; i < 5; ++i) cuda::caching_allocator_delete(cuda::caching_allocator_alloc(512));
  snap = cuda::memory::memory_snapshot();
  EXPECT_EQ(snap.device_traces[0].size(), 4u);  // a ring of max_entries
  cuda::memory::record_memory_history(std::nullopt);
  EXPECT_TRUE(cuda::memory::memory_snapshot().device_traces[0].empty());
}

// A distinct call site per thread: its name must head the stacks that thread's
// allocations keep, however the threads interleave in the process-wide stack table.
template <int Thread>
__attribute__((noinline)) void* alloc_from_thread(std::size_t size) {
  void* p = cuda::caching_allocator_alloc(size, 0);
  asm volatile("" : : "r"(p) : "memory");  // a call, not a jump: this frame stays
  return p;
}

template <int Thread>
void allocate_in_range(std::vector<void*>& out) {
  cuda::nvtx::Range range(("thread " + std::to_string(Thread)).c_str());
  for (int i = 0; i < 50; ++i) out.push_back(alloc_from_thread<Thread>(4096 + 512 * Thread));
}

TEST_F(AllocatorTest, HistoryKeepsEachThreadsStackAndRanges) {
  // NVTX sets itself up at its first call without synchronising (its own header code, a race
  // ThreadSanitizer reports when three threads make that call at once): make it here first,
  // as a program's main thread does long before its workers start.
  { cuda::nvtx::Range setup("setup"); }
  cuda::memory::record_memory_history("all", "all", "all", 1000);
  std::vector<void*> blocks[3];
  std::thread t0([&] { allocate_in_range<0>(blocks[0]); });
  std::thread t1([&] { allocate_in_range<1>(blocks[1]); });
  std::thread t2([&] { allocate_in_range<2>(blocks[2]); });
  t0.join();
  t1.join();
  t2.join();
  const auto snap = cuda::memory::memory_snapshot();
  cuda::memory::record_memory_history(std::nullopt);
  std::map<std::uint64_t, int> thread_of;
  for (int t = 0; t < 3; ++t) {
    for (void* p : blocks[t]) thread_of[reinterpret_cast<std::uint64_t>(p)] = t;
  }
  int seen = 0;
  for (const auto& e : snap.device_traces[0]) {
    if (e.action != "alloc") continue;
    const int t = thread_of.at(e.addr);
    ++seen;
    EXPECT_EQ(e.user_metadata, "thread " + std::to_string(t));
    // The first frame outside the allocator's API is the thread's own call site (how many
    // allocator frames lie above it depends on what the compiler inlined).
    const auto caller = std::find_if(e.frames.begin(), e.frames.end(), [](const auto& f) {
      return std::string(f.name).rfind("cudascope::cuda::", 0) != 0;
    });
    ASSERT_NE(caller, e.frames.end());
    EXPECT_THAT(std::string(caller->name), ::testing::HasSubstr("alloc_from_thread<" + std::to_string(t) + ">"));
  }
  EXPECT_EQ(seen, 150);
  for (auto& list : blocks) {
    for (void* p : list) cuda::caching_allocator_delete(p);
  }
}

// One record stands for both when a free completes at once; the snapshot still shows
// free_requested then free_completed, at the same time.
TEST_F(AllocatorTest, AFreeThatCompletesAtOnceIsRequestedThenCompleted) {
  cuda::memory::record_memory_history("all", "all", "python", 100);
  void* p = cuda::caching_allocator_alloc(4096);
  cuda::caching_allocator_delete(p);
  const auto snap = cuda::memory::memory_snapshot();
  cuda::memory::record_memory_history(std::nullopt);
  const auto& trace = snap.device_traces[0];
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace[2].action, "free_requested");
  EXPECT_EQ(trace[3].action, "free_completed");
  EXPECT_EQ(trace[2].addr, reinterpret_cast<std::uint64_t>(p));
  EXPECT_EQ(trace[3].addr, trace[2].addr);
  EXPECT_EQ(trace[3].time_us, trace[2].time_us);
  EXPECT_LE(trace[1].time_us, trace[2].time_us);
}

TEST_F(AllocatorTest, SnapshotSegmentsTileAndAgreeWithStats) {
  void* a = cuda::caching_allocator_alloc(3000);
  void* b = cuda::caching_allocator_alloc(5 * kMiB);
  const auto snap = cuda::memory::memory_snapshot();
  std::size_t reserved = 0, allocated = 0;
  for (const auto& s : snap.segments) {
    if (s.device != 0) continue;
    std::uint64_t at = s.address;
    for (const auto& blk : s.blocks) {
      EXPECT_EQ(blk.address, at);
      at += blk.size;
    }
    reserved += s.total_size;
    allocated += s.allocated_size;
  }
  EXPECT_EQ(static_cast<std::int64_t>(reserved), cuda::memory_reserved(0));
  EXPECT_EQ(static_cast<std::int64_t>(allocated), cuda::memory_allocated(0));
  const std::string json = cuda::memory::snapshot_to_json(snap);
  EXPECT_THAT(json, ::testing::HasSubstr("\"segment_type\":\"small\""));
  EXPECT_THAT(json, ::testing::HasSubstr("\"allocator_settings\":{\"PYTORCH_CUDA_ALLOC_CONF\":\"\""));
  const std::string pickle = cuda::memory::snapshot_to_pickle(snap);
  EXPECT_EQ(pickle.substr(0, 2), std::string("\x80\x04", 2));
  EXPECT_EQ(pickle.back(), '.');
  cuda::caching_allocator_delete(a);
  cuda::caching_allocator_delete(b);
}

// Python's own pickle module reads what we write (python3 is a test dependency).
TEST_F(AllocatorTest, PythonReadsOurPickle) {
  ASSERT_EQ(std::system("python3 -c 'import pickle' >/dev/null 2>&1"), 0) << "python3 is needed to run the tests";
  cuda::memory::record_memory_history("all");
  void* a = cuda::caching_allocator_alloc(123456);
  const std::string path = ::testing::TempDir() + "cudascope_analysis.pickle.gz";
  cuda::memory::dump_snapshot(path);
  cuda::memory::record_memory_history(std::nullopt);
  cuda::caching_allocator_delete(a);
  const std::string check =
      "python3 -c \"import pickle,gzip,sys; d=pickle.load(gzip.open(sys.argv[1])); "
      "s=[s for s in d['segments'] if s['device']==0]; "
      "assert any(b['requested_size']==123456 and b['state']=='active_allocated' for x in s for b in x['blocks']); "
      "assert d['segments'][0]['segment_pool_id']==(0,0); "
      "assert d['device_traces'][0][-1]['action']=='alloc'; "
      "assert d['allocator_settings']['max_split_size']==-1\" " + path;
  EXPECT_EQ(std::system(check.c_str()), 0);
}

// change_current_allocator and backend:cudaMallocAsync need a process that has not allocated.
int pluggable_child(int, char**) {
  try {
    cuda::CUDAPluggableAllocator plugin(CUDASCOPE_TEST_PLUGIN, "test_alloc", "test_free");
    cuda::change_current_allocator(plugin);
    if (cuda::get_allocator_backend() != "pluggable") return 2;
    void* p = cuda::caching_allocator_alloc(1000);
    if (p == nullptr || cuda::memory_stats()["allocated_bytes.all.current"] != 1000) return 3;
    cuda::caching_allocator_delete(p);
    try {
      cuda::change_current_allocator(plugin);
      return 4;  // refused after the first allocation
    } catch (const cuda::Error&) {
    }
    std::printf("ok\n");
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s\n", e.what());
    return 1;
  }
}
const ChildModeRegistrar pluggable_mode("--pluggable-child", pluggable_child);

TEST(AllocatorBackendTest, PluggableAllocatorServesTheProcessWhenChosenFirst) {
  const auto r = run_self({"--pluggable-child"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("ok"));
}

TEST(AllocatorBackendTest, ChangeIsRefusedAfterTheFirstAllocation) {
  cuda::caching_allocator_delete(cuda::caching_allocator_alloc(512));
  cuda::CUDAPluggableAllocator plugin(CUDASCOPE_TEST_PLUGIN, "test_alloc", "test_free");
  EXPECT_THAT([&] { cuda::change_current_allocator(plugin); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("already allocated")));
  EXPECT_THAT([] { cuda::CUDAPluggableAllocator("/nonexistent/libx.so", "a", "b"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("/nonexistent/libx.so")));
  EXPECT_THAT([] { cuda::CUDAPluggableAllocator(CUDASCOPE_TEST_PLUGIN, "no_such_fn", "test_free"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("no_such_fn")));
}

int async_child(int, char**) {
  if (cuda::get_allocator_backend() != "cudaMallocAsync") return 2;
  void* p = cuda::caching_allocator_alloc(1 << 20);
  if (cuda::memory_allocated() != (1 << 20)) return 3;
  cuda::caching_allocator_delete(p);
  return cuda::memory_allocated() == 0 ? 0 : 4;
}
const ChildModeRegistrar async_mode("--async-child", async_child);

TEST(AllocatorBackendTest, MallocAsyncBackendFromTheConfiguration) {
  const auto r = run_self({"--async-child"}, {"CUDASCOPE_ALLOC_CONF=backend:cudaMallocAsync"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// cudaMallocAsync allocates on the current device, so the allocator makes the block's device
// current for the call; the caller's current device must be the same afterwards. (The sim's
// malloc_async refuses a device that is not current, so the switch is checked too.)
int async_device_child(int, char**) {
  if (cuda::device_count() < 2) return 0;
  for (const int current : {0, 1}) {
    const int other = 1 - current;
    cuda::set_device(current);
    const std::int64_t before = cuda::memory_allocated(other);
    void* p = cuda::caching_allocator_alloc(1 << 20, other);
    if (cuda::current_device() != current || cuda::detail::backend().current_device() != current) return 2;
    if (cuda::memory_allocated(other) - before != (1 << 20)) return 3;
    cuda::caching_allocator_delete(p);
    if (cuda::detail::backend().current_device() != current) return 4;
    if (cuda::memory_allocated(other) != before) return 5;
  }
  cuda::set_device(0);
  return 0;
}
const ChildModeRegistrar async_device_mode("--async-device-child", async_device_child);

TEST(AllocatorBackendTest, MallocAsyncLeavesTheCurrentDeviceAsItFoundIt) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  const auto r = run_self({"--async-device-child"}, {"CUDASCOPE_ALLOC_CONF=backend:cudaMallocAsync"});
  EXPECT_EQ(r.exit_code, 0) << "2: the allocation changed the current device, 3: not counted on the asked device, "
                               "4: the free changed the current device, 5: the free was not counted\n"
                            << r.output;
}

}  // namespace
}  // namespace cudascope::testing
