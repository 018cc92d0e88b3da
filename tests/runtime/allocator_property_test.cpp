// Property test: long random sequences of allocator operations on the sim backend (several
// devices and streams, record_stream, empty_cache, memory-fraction changes, five
// configurations), with the invariants checked after every step: blocks tile their
// segment, nothing overlaps or is lost, free neighbours are merged, and every statistic
// equals a recount. CUDASCOPE_PROPERTY_OPS sets the total (default 1,000,000).
#include "allocator_test_util.h"

#include <random>

namespace cudascope::testing {
namespace {

constexpr std::size_t kMiB = 1 << 20;

std::size_t total_ops() {
  const char* text = std::getenv("CUDASCOPE_PROPERTY_OPS");
  return text ? std::stoull(text) : 1000000;
}

struct Live {
  void* ptr;
  int device;
};

std::size_t random_size(std::mt19937_64& rng) {
  const auto bucket = rng() % 10;
  if (bucket < 6) return 1 + rng() % (kMiB);           // small pool
  if (bucket < 9) return kMiB + rng() % (9 * kMiB);    // 1-10 MiB: shared 20 MiB segments
  return 10 * kMiB + rng() % (90 * kMiB);              // own segments
}

void run_config(const std::string& conf, std::size_t ops, std::uint64_t seed) {
  SCOPED_TRACE("config '" + conf + "'");
  cuda::memory::set_allocator_settings(conf);
  const int devices = std::min(cuda::device_count(), 2);
  std::vector<std::vector<cuda::Stream>> streams(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    streams[static_cast<std::size_t>(d)] = {cuda::default_stream(d), cuda::Stream(d), cuda::Stream(d)};
  }
  std::mt19937_64 rng(seed);
  std::vector<Live> live;
  for (std::size_t step = 0; step < ops; ++step) {
    const int device = static_cast<int>(rng() % static_cast<unsigned>(devices));
    const auto& ss = streams[static_cast<std::size_t>(device)];
    const auto r = rng() % 1000;
    if ((r < 480 && live.size() < 48) || live.empty()) {
      const cuda::Stream& s = ss[rng() % ss.size()];
      try {
        live.push_back({cuda::caching_allocator_alloc(random_size(rng), device, s), device});
      } catch (const cuda::OutOfMemoryError&) {
        // Expected under a small memory fraction.
      }
    } else if (r < 940) {
      const std::size_t i = rng() % live.size();
      if (rng() % 8 == 0) {
        const auto& others = streams[static_cast<std::size_t>(live[i].device)];
        cuda::record_stream(live[i].ptr, others[rng() % others.size()]);
      }
      cuda::caching_allocator_delete(live[i].ptr);
      live[i] = live.back();
      live.pop_back();
    } else if (r < 950) {
      cuda::empty_cache();
    } else if (r < 960) {
      const double fractions[] = {0.01, 0.05, 0.5, 1.0};
      cuda::set_per_process_memory_fraction(fractions[rng() % 4], device);
    } else if (r < 965) {
      cuda::reset_peak_memory_stats(device);
    } else {
      const std::size_t i = rng() % std::max<std::size_t>(live.size(), 1);
      if (i < live.size()) cuda::record_stream(live[i].ptr, ss[rng() % ss.size()]);
    }
    for (int d = 0; d < devices; ++d) {
      const std::string problem = cuda::detail::alloc::check_invariants(d);
      if (!problem.empty()) {
        FAIL() << "after step " << step << " (device " << d << "): " << problem;
      }
    }
  }
  for (const Live& l : live) cuda::caching_allocator_delete(l.ptr);
  for (int d = 0; d < devices; ++d) {
    for (const auto& s : streams[static_cast<std::size_t>(d)]) s.synchronize();
    cuda::detail::alloc::clear_memory_limit(d);
  }
  cuda::empty_cache();
  for (int d = 0; d < devices; ++d) {
    EXPECT_EQ(cuda::memory_reserved(d), 0) << "device " << d;
    EXPECT_EQ(cuda::memory_stats(d)["active.all.current"], 0);
    EXPECT_EQ(cuda::detail::alloc::check_invariants(d), "");
  }
}

TEST(AllocatorPropertyTest, RandomOperationsKeepEveryInvariant) {
  const std::vector<std::string> configs = {"", "max_split_size_mb:40", "roundup_power2_divisions:[1:4,8:2,>:1]",
                                            "expandable_segments:True", "garbage_collection_threshold:0.5"};
  const std::size_t per_config = total_ops() / configs.size();
  std::uint64_t seed = 1;
  for (const auto& conf : configs) {
    run_config(conf, per_config, seed++);
    if (HasFatalFailure()) return;
  }
  cuda::memory::set_allocator_settings("");
}

}  // namespace
}  // namespace cudascope::testing
