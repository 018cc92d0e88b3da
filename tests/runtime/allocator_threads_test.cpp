// The allocator under concurrency (run under ThreadSanitizer in CI): threads allocate,
// free, record streams and read statistics at once; afterwards the invariants hold and
// nothing is left allocated.
#include "allocator_test_util.h"

#include <atomic>
#include <random>
#include <thread>

namespace cudascope::testing {
namespace {

TEST(AllocatorThreadsTest, ConcurrentOperationsKeepEveryInvariant) {
  const char* text = std::getenv("CUDASCOPE_PROPERTY_OPS");
  const std::size_t ops_per_thread = text ? std::stoull(text) / 8 : 20000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  cuda::Stream shared_side(0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 7);
      cuda::Stream own(0);
      std::vector<void*> live;
      for (std::size_t i = 0; i < ops_per_thread; ++i) {
        const auto r = rng() % 100;
        if (r < 50 && live.size() < 16) {
          const std::size_t size = (rng() % 4 == 0) ? (1 << 20) + rng() % (8 << 20) : 1 + rng() % 65536;
          live.push_back(cuda::caching_allocator_alloc(size, 0, (rng() % 2) ? own : cuda::default_stream(0)));
        } else if (!live.empty() && r < 95) {
          const std::size_t k = rng() % live.size();
          if (rng() % 10 == 0) cuda::record_stream(live[k], shared_side);
          cuda::caching_allocator_delete(live[k]);
          live[k] = live.back();
          live.pop_back();
        } else if (r < 97) {
          (void)cuda::memory_stats(0);
        } else if (r < 98) {
          cuda::empty_cache();
        } else if (!cuda::detail::alloc::check_invariants(0).empty()) {
          failures++;
        }
      }
      for (void* p : live) cuda::caching_allocator_delete(p);
    });
  }
  for (auto& t : threads) t.join();
  shared_side.synchronize();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cuda::detail::alloc::check_invariants(0), "");
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_reserved(0), 0);
  EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);
}

}  // namespace
}  // namespace cudascope::testing
