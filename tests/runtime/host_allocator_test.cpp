// The caching host allocator: PyTorch's behaviour and statistics, and a property test of
// random alloc / free / record_stream / empty_cache sequences with the invariants checked after
// every step (single- and multi-threaded, run under ASan and TSan by .ci/sanitizers.sh).
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
  EXPECT_EQ(s.active_requests.current, 2);
  EXPECT_EQ(s.active_requests.allocated, 3);
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
  EXPECT_EQ(allocator.stats().active_requests.current, 2);
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
  EXPECT_EQ(s.num_host_free, 1);  // c only: reserve blocks stay cached
  EXPECT_EQ(s.allocations.current, 2);
  EXPECT_EQ(allocator.allocate(600), a);  // the cached reserve block
  EXPECT_EQ(allocator.check_invariants(), "");
  allocator.free(a);
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
    EXPECT_EQ(s.active_requests.current, 0);
    EXPECT_EQ(s.allocations.current, 0);
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
  EXPECT_EQ(allocator.check_invariants(), "");
  EXPECT_EQ(allocator.stats().active_requests.current, 0);
}

TEST(HostAllocatorPropertyTest, ConcurrentThreadsKeepTheInvariants) {
  CachingHostAllocator allocator(cuda::detail::lazy_backend());
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] { random_walk(allocator, 100 + t, property_ops(3000) / 2, false); });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(allocator.check_invariants(), "");
  EXPECT_EQ(allocator.stats().active_requests.current, 0);
}
