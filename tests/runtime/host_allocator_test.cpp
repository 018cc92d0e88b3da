// The caching host allocator: PyTorch's behaviour and statistics, and a property test of
// random alloc / free / record_stream / empty_cache sequences with the invariants checked after
// every step (single- and multi-threaded, run under ASan and TSan by .ci/sanitizers.sh).
//
// The expected statistics come from reading PyTorch 2.11's CachingHostAllocator
// (aten/src/ATen/core/CachingHostAllocator.h; host_memory.h says what it does): a hand-out
// adds 1 and the block's bytes to its size bucket's active figures; a free with no stream use
// changes nothing; a release by completed events takes 1 from active_requests and, through
// decrease((size_t)-1), adds 1 to active_bytes.current and takes 1 from its freed;
// empty_cache lowers only allocations / allocated_bytes; the active peaks are sums of bucket
// peaks. bench/torch_compare/host_stats_check.py checks the same rules against torch on a GPU.
#include "test_support.h"

#include "backend/backend.h"
#include "host_allocator/host_allocator.h"
#include "runtime_state.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

namespace cuda = cudascope::cuda;
using cuda::detail::CachingHostAllocator;
using namespace std::chrono_literals;

namespace {
int property_ops(int fallback) {
  const char* text = std::getenv("CUDASCOPE_PROPERTY_OPS");
  return text != nullptr ? std::atoi(text) : fallback;
}

// {current, peak, allocated, freed}, compared as one value so a failure shows all four.
std::vector<std::int64_t> figures(const cuda::MemoryStat& s) { return {s.current, s.peak, s.allocated, s.freed}; }
using Figures = std::vector<std::int64_t>;
constexpr std::int64_t KiB = 1024;
}  // namespace

TEST(HostAllocatorTest, RoundsToPowersOfTwoAndReusesExactSizes) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  void* a = allocator.allocate(1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(allocator.stats().active_bytes.current, 1024);
  allocator.free(a);
  EXPECT_EQ(allocator.allocate(600), a);  // 1024 again: the cached block
  void* b = allocator.allocate(1025);     // 2048: a new block
  EXPECT_NE(b, a);
  const cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(s.num_host_alloc, 2);
  EXPECT_EQ(s.allocations.current, 2);
  EXPECT_EQ(s.allocated_bytes.current, 1024 + 2048);
  EXPECT_EQ(s.active_requests.current, 3);  // the free of `a` is never subtracted (PyTorch 2.11)
  EXPECT_EQ(s.active_requests.allocated, 3);
  EXPECT_EQ(s.active_bytes.current, 1024 + 1024 + 2048);
  EXPECT_EQ(s.host_alloc_time.count, 2);
  EXPECT_EQ(allocator.allocate(0), nullptr);
  EXPECT_EQ(allocator.check_invariants(), "");
}

TEST(HostAllocatorTest, EmptyCacheReturnsOnlyUnusedBlocks) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  void* kept = allocator.allocate(4096);
  allocator.free(allocator.allocate(8192));
  allocator.empty_cache();
  const cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(s.num_host_free, 1);
  EXPECT_EQ(s.allocations.current, 1);
  EXPECT_EQ(s.allocated_bytes.current, 4096);
  EXPECT_EQ(s.host_free_time.count, 1);
  EXPECT_EQ(s.active_requests.current, 2);  // empty_cache leaves the active figures
  EXPECT_EQ(s.active_bytes.current, 4096 + 8192);
  EXPECT_TRUE(allocator.is_pinned(static_cast<char*>(kept) + 4095));
  EXPECT_FALSE(allocator.is_pinned(static_cast<char*>(kept) + 4096));
  allocator.free(kept);
  EXPECT_EQ(allocator.check_invariants(), "");
}

TEST(HostAllocatorTest, BlockUsedByAStreamWaitsForItsEvent) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  cuda::Stream stream;
  void* block = allocator.allocate(1 << 20);
  EXPECT_TRUE(allocator.record_stream(static_cast<char*>(block) + 100, stream.device_index(), stream.handle()));
  cuda::busy_wait(200ms, stream);
  allocator.free(block);
  EXPECT_EQ(allocator.pending_blocks(), 1u);
  EXPECT_EQ(allocator.stats().active_requests.current, 1);  // active until the stream is done
  EXPECT_NE(allocator.allocate(1 << 20), block);  // still in use by the stream
  allocator.empty_cache();                        // a pending block is not released
  EXPECT_EQ(allocator.pending_blocks(), 1u);
  stream.synchronize();
  void* reused = allocator.allocate(1 << 20);
  EXPECT_EQ(reused, block);
  EXPECT_EQ(allocator.pending_blocks(), 0u);
  const cuda::detail::HostStats s = allocator.stats();
  // Three hand-outs of 1 MiB, one release by events (bytes: +1, freed -1).
  EXPECT_EQ(figures(s.active_requests), (Figures{2, 2, 3, 1}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{3 * (1 << 20) + 1, 3 * (1 << 20) + 1, 3 * (1 << 20), -1}));
  EXPECT_EQ(allocator.check_invariants(), "");
}

TEST(HostAllocatorTest, MisuseThrowsAndChangesNothing) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  void* block = allocator.allocate(64);
  int local = 0;
  EXPECT_THROW(allocator.free(&local), cuda::Error);
  EXPECT_FALSE(allocator.record_stream(&local, 0, nullptr));
  allocator.free(block);
  EXPECT_THROW(allocator.free(block), cuda::Error);
  EXPECT_EQ(allocator.check_invariants(), "");
}

// alloc / free / alloc / free / empty_cache with no stream use: PyTorch's active_requests.current
// reads 1, 1, 2, 2, 2 (as measured with torch 2.11 on an H100): the frees and empty_cache never
// subtract.
TEST(HostAllocatorTorchFiguresTest, FreeWithNoStreamUseIsNeverSubtracted) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  Figures requests, allocations;
  const auto note = [&] {
    const cuda::detail::HostStats s = allocator.stats();
    requests.push_back(s.active_requests.current);
    allocations.push_back(s.allocations.current);
  };
  void* a = allocator.allocate(10000);  // a 16 KiB block
  note();
  allocator.free(a);
  note();
  void* b = allocator.allocate(10000);
  EXPECT_EQ(b, a);
  note();
  allocator.free(b);
  note();
  allocator.empty_cache();
  note();
  EXPECT_EQ(requests, (Figures{1, 1, 2, 2, 2}));
  EXPECT_EQ(allocations, (Figures{1, 1, 1, 1, 0}));
  const cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{2, 2, 2, 0}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{32 * KiB, 32 * KiB, 32 * KiB, 0}));
  EXPECT_EQ(figures(s.allocations), (Figures{0, 1, 1, 1}));
  EXPECT_EQ(figures(s.allocated_bytes), (Figures{0, 16 * KiB, 16 * KiB, 16 * KiB}));
  EXPECT_EQ(s.num_host_alloc, 1);
  EXPECT_EQ(s.num_host_free, 1);
  EXPECT_EQ(s.host_alloc_time.count, 1);
  EXPECT_EQ(s.host_free_time.count, 1);
  EXPECT_EQ(allocator.check_invariants(), "");
}

// A block used on one stream: when its event is found complete (here by the next allocation)
// active_requests drops by 1 while active_bytes.current rises by 1 and its freed falls by 1
// (PyTorch's decrease(size) with size == -1); the active peaks are sums of per-bucket peaks,
// so 2 here although no more than one block was ever active at once.
TEST(HostAllocatorTorchFiguresTest, ReleaseByEventsTakesOneRequestAndAddsOneByte) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  cuda::Stream stream;
  void* b = allocator.allocate(100000);  // 128 KiB
  ASSERT_TRUE(allocator.record_stream(b, stream.device_index(), stream.handle()));
  allocator.free(b);
  EXPECT_EQ(allocator.pending_blocks(), 1u);
  EXPECT_EQ(figures(allocator.stats().active_requests), (Figures{1, 1, 1, 0}));
  stream.synchronize();
  void* c = allocator.allocate(3000);  // 4 KiB; the allocation's pass over events returns b first
  EXPECT_EQ(allocator.pending_blocks(), 0u);
  cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{1, 2, 2, 1}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{132 * KiB + 1, 132 * KiB, 132 * KiB, -1}));
  EXPECT_EQ(figures(s.allocations), (Figures{2, 2, 2, 0}));
  void* again = allocator.allocate(100000);  // the cached 128 KiB block
  EXPECT_EQ(again, b);
  s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{2, 2, 3, 1}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{260 * KiB + 1, 260 * KiB + 1, 260 * KiB, -1}));
  EXPECT_EQ(s.num_host_alloc, 2);
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(again);
  allocator.free(c);
}

// A block used on two streams is released only once both events are complete; empty_cache
// looks at events first, then returns it.
TEST(HostAllocatorTorchFiguresTest, BlockUsedOnTwoStreamsWaitsForBoth) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  cuda::Stream quick, slow;
  void* x = allocator.allocate(50000);  // 64 KiB
  ASSERT_TRUE(allocator.record_stream(x, quick.device_index(), quick.handle()));
  ASSERT_TRUE(allocator.record_stream(x, slow.device_index(), slow.handle()));
  cuda::busy_wait(500ms, slow);
  allocator.free(x);  // events on quick, then on slow
  quick.synchronize();
  void* y = allocator.allocate(3000);  // quick's event is consumed, slow's is not complete
  EXPECT_EQ(allocator.pending_blocks(), 1u);
  EXPECT_EQ(figures(allocator.stats().active_requests), (Figures{2, 2, 2, 0}));
  slow.synchronize();
  allocator.empty_cache();
  const cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(allocator.pending_blocks(), 0u);
  EXPECT_EQ(figures(s.active_requests), (Figures{1, 2, 2, 1}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{68 * KiB + 1, 68 * KiB, 68 * KiB, -1}));
  EXPECT_EQ(figures(s.allocations), (Figures{1, 2, 2, 1}));
  EXPECT_EQ(s.num_host_free, 1);
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(y);
}

// PyTorch's pass over events starts at the oldest and stops at the first not complete: a
// block whose event is complete waits behind an older one that is not. And a bucket's
// active_bytes.current can pass its peak (the +1 of a release does not raise the peak).
TEST(HostAllocatorTorchFiguresTest, OldestIncompleteEventStopsThePass) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  cuda::Stream busy, idle;
  void* p1 = allocator.allocate(50000);  // 64 KiB
  ASSERT_TRUE(allocator.record_stream(p1, busy.device_index(), busy.handle()));
  cuda::busy_wait(500ms, busy);
  allocator.free(p1);
  void* p2 = allocator.allocate(20000);  // 32 KiB
  ASSERT_TRUE(allocator.record_stream(p2, idle.device_index(), idle.handle()));
  allocator.free(p2);
  idle.synchronize();
  void* p3 = allocator.allocate(3000);  // p1's event first: not complete, so p2 stays pending
  EXPECT_EQ(allocator.pending_blocks(), 2u);
  EXPECT_EQ(allocator.cached_blocks(), 0u);
  EXPECT_EQ(allocator.stats().active_requests.current, 3);
  busy.synchronize();
  void* p4 = allocator.allocate(20000);  // both returned, then p2's block handed out again
  EXPECT_EQ(p4, p2);
  const cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{2, 3, 4, 2}));
  // Buckets: 64 KiB {64K+1, peak 64K}, 32 KiB {64K+1, peak 64K+1}, 4 KiB {4K}.
  EXPECT_EQ(figures(s.active_bytes), (Figures{132 * KiB + 2, 132 * KiB + 1, 132 * KiB, -2}));
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(p3);
  allocator.free(p4);
}

TEST(HostAllocatorTorchFiguresTest, ResetPeakAndAccumulatedAsTorch) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  cuda::Stream stream;
  allocator.free(allocator.allocate(10000));  // 16 KiB, freed with no stream use
  void* b = allocator.allocate(10000);        // the same block again
  void* c = allocator.allocate(100000);       // 128 KiB, used on a stream
  ASSERT_TRUE(allocator.record_stream(c, stream.device_index(), stream.handle()));
  allocator.free(c);
  stream.synchronize();
  void* d = allocator.allocate(3000);  // 4 KiB; c's block returned first
  cuda::detail::HostStats s = allocator.stats();
  // Buckets: 16 KiB {2, peak 2}, 128 KiB {0, peak 1, freed 1}, 4 KiB {1}.
  EXPECT_EQ(figures(s.active_requests), (Figures{3, 4, 4, 1}));
  const std::int64_t active_bytes = 32 * KiB + (128 * KiB + 1) + 4 * KiB;
  EXPECT_EQ(figures(s.active_bytes), (Figures{active_bytes, 164 * KiB, 164 * KiB, -1}));
  EXPECT_EQ(s.host_alloc_time.count, 3);

  allocator.reset_peak();
  s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{3, 3, 4, 1}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{active_bytes, active_bytes, 164 * KiB, -1}));
  EXPECT_EQ(figures(s.allocations), (Figures{3, 3, 3, 0}));
  EXPECT_EQ(s.host_alloc_time.count, 3);  // reset_peak zeroes only min and max
  EXPECT_EQ(s.host_alloc_time.min, 0);
  EXPECT_EQ(s.host_alloc_time.max, 0);

  allocator.reset_accumulated();
  s = allocator.stats();
  EXPECT_EQ(figures(s.active_requests), (Figures{3, 3, 0, 0}));
  EXPECT_EQ(figures(s.active_bytes), (Figures{active_bytes, active_bytes, 0, 0}));
  EXPECT_EQ(figures(s.allocations), (Figures{3, 3, 0, 0}));
  EXPECT_EQ(figures(s.allocated_bytes), (Figures{148 * KiB, 148 * KiB, 0, 0}));
  EXPECT_EQ(s.num_host_alloc, 0);
  EXPECT_EQ(s.num_host_free, 0);
  EXPECT_EQ(s.host_alloc_time.count, 0);
  EXPECT_EQ(s.host_alloc_time.total, 0);

  allocator.empty_cache();  // c's cached block
  s = allocator.stats();
  EXPECT_EQ(figures(s.allocations), (Figures{2, 3, 0, 1}));
  EXPECT_EQ(s.num_host_free, 1);
  EXPECT_EQ(figures(s.active_requests), (Figures{3, 3, 0, 0}));
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(b);
  allocator.free(d);
}

// c10's DurationStat: min is replaced while it is 0, so a first 0 us call does not stick.
TEST(HostAllocatorTorchFiguresTest, DurationStatFollowsTorchsRules) {
  cuda::detail::DurationStat d;
  for (std::int64_t us : {0, 7, 3}) d.add(us);
  EXPECT_EQ(d.total, 10);
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.max, 7);
  EXPECT_EQ(d.min, 3);
  cuda::detail::HostStats s;
  s.host_alloc_time = d;
  EXPECT_EQ(cuda::detail::host_stats_map(s).at("host_alloc_time.avg"), 3);  // total / count
}

TEST(HostAllocatorTest, HostMemoryStatsHasPyTorchsKeys) {
  const std::map<std::string, std::int64_t> stats = cuda::host_memory_stats();
  std::vector<std::string> keys;
  for (const auto& [key, value] : stats) keys.push_back(key);
  // torch.cuda.host_memory_stats() of PyTorch 2.11, as printed on the GPU machine
  // (bench/results/tensor.md).
  std::vector<std::string> expected;
  for (const char* stat : {"active_bytes", "active_requests", "allocated_bytes", "allocations"}) {
    for (const char* kind : {"allocated", "current", "freed", "peak"}) expected.push_back(std::string(stat) + "." + kind);
  }
  for (const char* timing : {"host_alloc_time", "host_free_time"}) {
    for (const char* kind : {"avg", "count", "max", "min", "total"}) expected.push_back(std::string(timing) + "." + kind);
  }
  expected.push_back("num_host_alloc");
  expected.push_back("num_host_free");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(keys, expected);
}

TEST(HostAllocatorTest, ProcessAllocatorBacksPinnedTensorsAndEmptiesItsCache) {
  cuda::empty_host_cache();
  const auto before = cuda::host_memory_stats();
  {
    cudascope::Tensor t = cudascope::empty({1000}, cudascope::TensorOptions{}.pinned());
    EXPECT_TRUE(cuda::host::is_pinned(t.data_ptr()));
    const auto during = cuda::host_memory_stats();
    EXPECT_EQ(during.at("active_bytes.current"), before.at("active_bytes.current") + 4096);
  }
  EXPECT_EQ(cuda::host_memory_stats().at("allocated_bytes.current"), before.at("allocated_bytes.current") + 4096);
  cuda::empty_host_cache();
  const auto after = cuda::host_memory_stats();
  EXPECT_EQ(after.at("allocated_bytes.current"), before.at("allocated_bytes.current"));
  EXPECT_EQ(after.at("num_host_free"), before.at("num_host_free") + 1);
  EXPECT_EQ(after.at("active_requests.current"), before.at("active_requests.current") + 1);
  EXPECT_EQ(after.at("active_bytes.current"), before.at("active_bytes.current") + 4096);
  cuda::reset_accumulated_host_memory_stats();
  EXPECT_EQ(cuda::host_memory_stats().at("num_host_alloc"), 0);
}

namespace {
using cuda::detail::HostAllocatorOptions;

// True when a device-to-host copy into `host` returns while its stream is still busy: the
// memory is pinned. Into pageable memory the copy returns only once done, on sim as on CUDA.
// (Device-to-host: CUDA may return from a host-to-device copy out of pageable memory as soon
// as the data is staged, before the stream gets to it, as an H200 did.)
bool copies_asynchronously(void* host, std::size_t bytes) {
  cuda::detail::Backend& backend = cuda::detail::lazy_backend();
  cuda::Stream stream;
  void* device = cuda::caching_allocator_alloc(bytes, 0, stream);
  cuda::busy_wait(300ms, stream);
  backend.memcpy_async(0, host, device, bytes, cuda::detail::CopyKind::kDeviceToHost, stream.handle());
  const bool returned_early = !stream.query();
  stream.synchronize();
  cuda::caching_allocator_delete(device);
  return returned_early;
}
}  // namespace

TEST(HostAllocatorOptionsTest, HostRegisterPinsOrdinaryMemoryWithSeveralThreads) {
  HostAllocatorOptions options;
  options.use_host_register = true;
  options.num_register_threads = 4;
  CachingHostAllocator allocator(cuda::detail::lazy_backend(), options);
  const std::size_t bytes = 1 << 20;  // 256 pages: each of the 4 threads touches 64
  auto* block = static_cast<unsigned char*>(allocator.allocate(bytes));
  ASSERT_NE(block, nullptr);
  std::memset(block, 0x5a, bytes);
  EXPECT_TRUE(copies_asynchronously(block, bytes));
  std::vector<unsigned char> pageable(bytes, 1);
  EXPECT_FALSE(copies_asynchronously(pageable.data(), bytes)) << "the control: pageable memory copies synchronously";
  EXPECT_EQ(allocator.stats().host_alloc_time.count, 1);
  allocator.free(block);
  allocator.empty_cache();  // cudaHostUnregister + free; registering the range again must work
  EXPECT_EQ(allocator.stats().num_host_free, 1);
  EXPECT_EQ(allocator.stats().host_free_time.count, 1);
  void* again = allocator.allocate(bytes);
  EXPECT_TRUE(copies_asynchronously(again, bytes));
  allocator.free(again);
  EXPECT_EQ(allocator.check_invariants(), "");
}

TEST(HostAllocatorOptionsTest, ReserveSegmentServesRequestsUntilUsedUp) {
  HostAllocatorOptions options;
  options.reserve_segment_bytes = 1 << 20;
  CachingHostAllocator allocator(cuda::detail::lazy_backend(), options);
  auto* a = static_cast<char*>(allocator.allocate(1000));   // a 1 KiB block, one 4 KiB step
  auto* b = static_cast<char*>(allocator.allocate(5000));   // 8 KiB, two steps
  auto* c = static_cast<char*>(allocator.allocate(2 << 20));  // larger than the segment
  EXPECT_EQ(b - a, 4096);
  EXPECT_TRUE(c < a || c >= a + (1 << 20));
  EXPECT_TRUE(copies_asynchronously(b, 8192)) << "reserve memory is pinned";
  cuda::detail::HostStats s = allocator.stats();
  EXPECT_EQ(s.num_host_alloc, 3);          // three blocks
  EXPECT_EQ(s.host_alloc_time.count, 2);   // two calls into the backend: the segment and c
  allocator.free(a);
  allocator.free(c);
  allocator.empty_cache();
  s = allocator.stats();
  // PyTorch drops both: a is counted as returned (no call, so no time) and its space is not
  // handed out again.
  EXPECT_EQ(s.num_host_free, 2);
  EXPECT_EQ(s.host_free_time.count, 1);
  EXPECT_EQ(s.allocations.current, 1);
  EXPECT_EQ(s.allocated_bytes.current, 8192);
  auto* next = static_cast<char*>(allocator.allocate(600));
  EXPECT_EQ(next, a + 4096 + 8192);  // carved after b, not a again
  EXPECT_EQ(allocator.stats().host_alloc_time.count, 2);
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(next);
  allocator.free(b);
}

TEST(HostAllocatorOptionsTest, BackgroundThreadReturnsBlocksWithoutAnAllocation) {
  for (const bool background : {false, true}) {
    SCOPED_TRACE(background ? "background thread" : "no background thread");
    HostAllocatorOptions options;
    options.use_background_threads = background;
    CachingHostAllocator allocator(cuda::detail::lazy_backend(), options);
    cuda::Stream stream;
    void* block = allocator.allocate(1 << 16);
    ASSERT_TRUE(allocator.record_stream(block, stream.device_index(), stream.handle()));
    cuda::busy_wait(100ms, stream);
    allocator.free(block);
    EXPECT_EQ(allocator.pending_blocks(), 1u);
    stream.synchronize();
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (allocator.cached_blocks() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
      if (!background && std::chrono::steady_clock::now() + 2700ms > deadline) break;  // 300 ms is plenty
    }
    // Without the thread, blocks wait for the next allocation (or empty_cache) to look at them.
    EXPECT_EQ(allocator.cached_blocks(), background ? 1u : 0u);
    EXPECT_EQ(allocator.allocate(1 << 16), block);
    allocator.free(block);
    EXPECT_EQ(allocator.check_invariants(), "");
  }
}

TEST(HostAllocatorOptionsTest, ProcessAllocatorFollowsTheAllocatorSettings) {
  cuda::memory::set_allocator_settings("pinned_use_cuda_host_register:True,pinned_num_register_threads:2");
  void* block = cuda::host::allocate(3 << 20);  // a size no other test caches
  cuda::memory::set_allocator_settings("");
  EXPECT_TRUE(cuda::host::is_pinned(block));
  EXPECT_TRUE(copies_asynchronously(block, 3 << 20));
  const auto before = cuda::host_memory_stats();
  cuda::host::free(block);
  cuda::empty_host_cache();  // returned as registered memory: unregistered, then freed
  EXPECT_EQ(cuda::host_memory_stats().at("num_host_free"), before.at("num_host_free") + 1);
}

namespace {
// Random operations on one allocator from one thread: allocate sizes from 1 B to 1 MiB, free,
// mark blocks as used on a few streams (with short kernels queued there), empty the cache,
// synchronise a stream; the invariants hold after each, and every live block keeps the bytes
// written into it (no block is handed out twice).
void random_walk(CachingHostAllocator& allocator, std::uint32_t seed, int ops, bool check_every_step) {
  std::mt19937 rng(seed);
  std::vector<cuda::Stream> streams;
  for (int i = 0; i < 3; ++i) streams.emplace_back(static_cast<int>(i % cuda::device_count()));
  struct Live {
    unsigned char* ptr;
    std::size_t size;
    unsigned char tag;
  };
  std::vector<Live> live;
  for (int op = 0; op < ops; ++op) {
    const unsigned choice = rng() % 100;
    if (choice < 40 || live.empty()) {
      const std::size_t power = std::size_t{1} << (rng() % 21);
      const std::size_t size = power - rng() % power;
      auto* ptr = static_cast<unsigned char*>(allocator.allocate(size));
      const auto tag = static_cast<unsigned char>(rng());
      ptr[0] = tag;
      live.push_back({ptr, size, tag});
    } else if (choice < 75) {
      const std::size_t index = rng() % live.size();
      ASSERT_EQ(live[index].ptr[0], live[index].tag) << "a live block was handed out again";
      allocator.free(live[index].ptr);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(index));
    } else if (choice < 92) {
      const cuda::Stream& stream = streams[rng() % streams.size()];
      if (rng() % 4 == 0) cuda::busy_wait(std::chrono::microseconds(rng() % 200), stream);
      const Live& block = live[rng() % live.size()];
      ASSERT_TRUE(allocator.record_stream(block.ptr + rng() % block.size, stream.device_index(), stream.handle()));
    } else if (choice < 96) {
      allocator.empty_cache();
    } else {
      streams[rng() % streams.size()].synchronize();
    }
    if (check_every_step) {
      ASSERT_EQ(allocator.check_invariants(), "") << "after op " << op;
    }
  }
  for (const Live& block : live) allocator.free(block.ptr);
  for (const cuda::Stream& stream : streams) stream.synchronize();
  allocator.empty_cache();
  EXPECT_EQ(allocator.check_invariants(), "");
}
}  // namespace

TEST(HostAllocatorPropertyTest, RandomSequencesKeepTheInvariants) {
  for (std::uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    CachingHostAllocator allocator(cuda::detail::lazy_backend());
    random_walk(allocator, seed, property_ops(3000), /*check_every_step=*/true);
    const cuda::detail::HostStats s = allocator.stats();
    // Every block freed and returned; the active figures keep what PyTorch keeps (the
    // invariants recount them).
    EXPECT_EQ(s.allocations.current, 0);
    EXPECT_EQ(s.active_requests.current, s.active_requests.allocated - s.active_requests.freed);
    EXPECT_EQ(s.num_host_alloc, s.num_host_free);
    EXPECT_EQ(allocator.pending_blocks(), 0u);
  }
}

TEST(HostAllocatorPropertyTest, PinnedOptionsKeepTheInvariantsUnderThreads) {
  HostAllocatorOptions options;
  options.use_host_register = true;
  options.num_register_threads = 2;
  options.use_background_threads = true;
  options.reserve_segment_bytes = 4 << 20;
  CachingHostAllocator allocator(cuda::detail::lazy_backend(), options);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 3; ++t) {
    threads.emplace_back([&allocator, t] { random_walk(allocator, 200 + t, property_ops(3000) / 3, t == 0); });
  }
  for (std::thread& thread : threads) thread.join();
  allocator.empty_cache();  // reserve blocks too
  EXPECT_EQ(allocator.check_invariants(), "");
  EXPECT_EQ(allocator.stats().allocations.current, 0);
}

TEST(HostAllocatorPropertyTest, ConcurrentThreadsKeepTheInvariants) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] { random_walk(allocator, 100 + t, property_ops(3000) / 2, false); });
  }
  for (std::thread& thread : threads) thread.join();
  allocator.empty_cache();
  EXPECT_EQ(allocator.check_invariants(), "");
  EXPECT_EQ(allocator.stats().allocations.current, 0);
  EXPECT_EQ(allocator.pending_blocks(), 0u);
}
