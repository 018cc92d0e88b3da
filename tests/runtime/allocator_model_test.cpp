// The caching allocator against a reference model of its statistics (allocator_model.h):
// random operations on the sim backend go to both, and after every step all of
// memory_stats()'s keys are compared one by one, each segment and block is compared with the
// model's, and no two segments overlap. CUDASCOPE_MODEL_OPS sets the steps per
// configuration (default 20,000).
#include "allocator_model.h"
#include "allocator_test_util.h"

#include <random>
#include <sstream>

namespace cudascope::testing {
namespace {

using model::kMiB;

std::size_t steps() {
  const char* text = std::getenv("CUDASCOPE_MODEL_OPS");
  return text ? std::stoull(text) : 20000;
}

// Sizes at the edges of the rules: the pools' boundary, the 10 MiB and 512-byte roundings,
// and what leaves exactly 1 MiB (not split) or 1 MiB + 512 (split) of a 20 MiB segment.
constexpr std::uint64_t kEdges[] = {1,           512,          513,          kMiB,        kMiB + 1,
                                    10 * kMiB - 512, 10 * kMiB, 19 * kMiB, 19 * kMiB - 512, 19 * kMiB + 512,
                                    40 * kMiB,   40 * kMiB - 512};

std::uint64_t random_size(std::mt19937_64& rng) {
  const auto bucket = rng() % 20;
  if (bucket == 0) return 0;                               // nullptr, counted nowhere
  if (bucket < 3) return kEdges[rng() % std::size(kEdges)];
  if (bucket < 11) return 1 + rng() % kMiB;                // small pool
  if (bucket < 17) return kMiB + 1 + rng() % (9 * kMiB);   // shared 20 MiB segments
  return 10 * kMiB + rng() % (50 * kMiB);                  // own segments, oversize under max_split
}

// The keys whose values differ, "key: allocator X, model Y", one per line.
std::string differences(const std::map<std::string, std::int64_t>& real,
                        const std::map<std::string, std::int64_t>& expected) {
  std::ostringstream out;
  for (const auto& [key, value] : expected) {
    const auto it = real.find(key);
    if (it == real.end()) {
      out << key << ": missing from memory_stats\n";
    } else if (it->second != value) {
      out << key << ": allocator " << it->second << ", model " << value << "\n";
    }
  }
  for (const auto& [key, value] : real) {
    if (!expected.count(key)) out << key << ": not in the model (" << value << ")\n";
  }
  return out.str();
}

// Segments overlapping each other, in any device's list.
std::string overlaps(const cuda::memory::Snapshot& snap) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& seg : snap.segments) ranges.emplace_back(seg.address, seg.address + seg.total_size);
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      std::ostringstream out;
      out << "segment at 0x" << std::hex << ranges[i].first << " starts inside the one at 0x" << ranges[i - 1].first
          << " (ends 0x" << ranges[i - 1].second << ")";
      return out.str();
    }
  }
  return "";
}

// The snapshot's device-0 segments and blocks against the model's: address, sizes, states.
std::string layout_differences(const cuda::memory::Snapshot& snap, const std::vector<model::Segment>& expected) {
  std::vector<const cuda::memory::SegmentInfo*> real;
  for (const auto& seg : snap.segments) {
    if (seg.device == 0) real.push_back(&seg);
  }
  std::sort(real.begin(), real.end(), [](auto* a, auto* b) { return a->address < b->address; });
  std::ostringstream out;
  if (real.size() != expected.size()) {
    out << real.size() << " segments, model " << expected.size();
    return out.str();
  }
  for (std::size_t s = 0; s < real.size(); ++s) {
    const auto& r = *real[s];
    const auto& m = expected[s];
    if (r.address != m.address || r.total_size != m.size() || (r.segment_type == "small") != m.small ||
        r.blocks.size() != m.blocks.size()) {
      out << "segment " << s << " at 0x" << std::hex << r.address << std::dec << ": " << r.total_size << " bytes, "
          << r.blocks.size() << " blocks, " << r.segment_type << "; model 0x" << std::hex << m.address << std::dec
          << ": " << m.size() << " bytes, " << m.blocks.size() << " blocks";
      return out.str();
    }
    for (std::size_t b = 0; b < r.blocks.size(); ++b) {
      const auto& rb = r.blocks[b];
      const auto& mb = m.blocks[b];
      const bool allocated = rb.state == "active_allocated";
      if (rb.address != mb.address || rb.size != mb.size || allocated != mb.allocated ||
          (allocated && rb.requested_size != mb.requested)) {
        out << "segment " << s << " block " << b << ": " << rb.size << " bytes " << rb.state << ", model " << mb.size
            << (mb.allocated ? " allocated" : " free");
        return out.str();
      }
    }
  }
  return "";
}

struct Coverage {
  std::size_t reused = 0, new_segments = 0, ooms = 0, frees = 0;
  std::int64_t final_num_ooms = -1;  // memory_stats' num_ooms after the last step (the cleanup resets it)
};

// Runs `n` random steps under `conf` with a memory limit, comparing after each. `seen` counts
// what the steps exercised, so a test can say its sequence reached the paths it checks.
void run_against_model(const std::string& conf, std::uint64_t max_split, std::uint64_t limit, std::size_t n,
                       std::uint64_t seed, Coverage& seen) {
  SCOPED_TRACE("config '" + conf + "', seed " + std::to_string(seed));
  fresh_allocator();
  cuda::memory::set_allocator_settings(conf);
  if (limit != model::kUnlimited) cuda::set_per_process_memory_limit(limit, 0);
  cuda::reset_accumulated_memory_stats(0);
  cuda::reset_peak_memory_stats(0);
  const std::vector<cuda::Stream> streams{cuda::default_stream(0), cuda::Stream(0), cuda::Stream(0)};
  model::AllocatorModel expected(max_split, limit);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> live;
  // A failed assertion returns early: leave a fresh allocator to the next test all the same.
  struct Cleanup {
    std::vector<std::uint64_t>& live;
    ~Cleanup() {
      for (std::uint64_t p : live) cuda::caching_allocator_delete(reinterpret_cast<void*>(p));
      fresh_allocator();
    }
  } cleanup{live};
  for (std::size_t step = 0; step < n; ++step) {
    const auto r = rng() % 100;
    std::string op;
    if ((r < 50 && live.size() < 40) || live.empty()) {
      const std::uint64_t size = random_size(rng);
      const int stream = static_cast<int>(rng() % streams.size());
      op = "alloc " + std::to_string(size) + " on stream " + std::to_string(stream);
      std::uint64_t got = 0;
      bool oom = false;
      try {
        got = reinterpret_cast<std::uint64_t>(cuda::caching_allocator_alloc(size, 0, streams[stream]));
      } catch (const cuda::OutOfMemoryError&) {
        oom = true;
      }
      const std::size_t segments_before = expected.segments().size();
      std::optional<std::uint64_t> want;
      try {
        want = expected.malloc(size, stream, got);
      } catch (const std::logic_error& e) {
        FAIL() << "step " << step << " (" << op << "): " << e.what();
      }
      if (!want) {
        ASSERT_TRUE(oom) << "step " << step << " (" << op << "): the model runs out of memory, the allocator gave 0x"
                         << std::hex << got;
        ++seen.ooms;
      } else {
        ASSERT_FALSE(oom) << "step " << step << " (" << op << "): OutOfMemoryError, the model fits it";
        ASSERT_EQ(got, *want) << "step " << step << " (" << op << "): address";
        if (got != 0) live.push_back(got);
        (expected.segments().size() > segments_before ? seen.new_segments : seen.reused) += got != 0;
      }
    } else if (r < 93) {
      const std::size_t i = rng() % live.size();
      op = "free";
      cuda::caching_allocator_delete(reinterpret_cast<void*>(live[i]));
      expected.free(live[i]);
      live[i] = live.back();
      live.pop_back();
      ++seen.frees;
    } else if (r < 96) {
      op = "empty_cache";
      cuda::empty_cache();
      expected.empty_cache();
    } else if (r < 98) {
      op = "reset_peak_memory_stats";
      cuda::reset_peak_memory_stats(0);
      expected.reset_peak();
    } else {
      op = "reset_accumulated_memory_stats";
      cuda::reset_accumulated_memory_stats(0);
      expected.reset_accumulated();
    }
    const std::string diff = differences(cuda::memory_stats(0), expected.stats());
    ASSERT_EQ(diff, "") << "step " << step << " (" << op << "): memory_stats differs from the model";
    const auto snap = cuda::memory::memory_snapshot();
    ASSERT_EQ(overlaps(snap), "") << "step " << step << " (" << op << ")";
    ASSERT_EQ(layout_differences(snap, expected.segments()), "") << "step " << step << " (" << op << ")";
  }
  seen.final_num_ooms = cuda::memory_stats(0)["num_ooms"];
}

TEST(AllocatorModelTest, DefaultConfigurationMatchesTheModelKeyByKey) {
  Coverage seen;
  run_against_model("", model::kUnlimited, 256 * kMiB, steps(), 11, seen);
  if (HasFatalFailure()) return;
  // The comparison covered reuse, new segments and the OOM path, not one easy case.
  EXPECT_GT(seen.reused, 0u);
  EXPECT_GT(seen.new_segments, 0u);
  EXPECT_GT(seen.ooms, 0u);
}

TEST(AllocatorModelTest, MaxSplitSizeMatchesTheModelKeyByKey) {
  // 40 MiB: requests of 40-60 MiB are oversize; release_available_cached_blocks runs on OOM.
  Coverage seen;
  run_against_model("max_split_size_mb:40", 40 * kMiB, 256 * kMiB, steps(), 12, seen);
  if (HasFatalFailure()) return;
  EXPECT_GT(seen.reused, 0u);
  EXPECT_GT(seen.ooms, 0u);
}

TEST(AllocatorModelTest, UnlimitedMemoryNeverRetriesAndMatchesTheModel) {
  // No limit: no OOM path at all, so num_alloc_retries and num_ooms must stay 0 throughout.
  Coverage seen;
  run_against_model("", model::kUnlimited, model::kUnlimited, steps() / 4, 13, seen);
  if (HasFatalFailure()) return;
  EXPECT_EQ(seen.ooms, 0u);
  EXPECT_EQ(seen.final_num_ooms, 0);
}

// The model's arithmetic on a sequence worked out by hand, so a model bug that the allocator
// shares cannot hide: two 600 KiB blocks share one 2 MiB small segment, freeing merges.
TEST(AllocatorModelTest, ModelCountsAHandWorkedSequence) {
  model::AllocatorModel m(model::kUnlimited, model::kUnlimited);
  const std::uint64_t base = 0x10000000;
  ASSERT_EQ(m.malloc(600 * 1024, 0, base), base);               // new 2 MiB segment, split
  ASSERT_EQ(m.malloc(600 * 1024, 0, 0xdead), base + 600 * 1024);  // reuses the remainder
  auto s = m.stats();
  EXPECT_EQ(s["segment.small_pool.current"], 1);
  EXPECT_EQ(s["reserved_bytes.all.current"], 2 << 20);
  EXPECT_EQ(s["allocated_bytes.small_pool.current"], 1200 * 1024);
  EXPECT_EQ(s["inactive_split.all.current"], 1);
  EXPECT_EQ(s["inactive_split_bytes.all.current"], (2 << 20) - 1200 * 1024);
  // The first split created (2 MiB - 600 KiB) of inactive split; the second shrank it by 600 KiB.
  EXPECT_EQ(s["inactive_split_bytes.all.allocated"], (2 << 20) - 600 * 1024);
  EXPECT_EQ(s["inactive_split_bytes.all.freed"], 600 * 1024);
  m.free(base);
  m.free(base + 600 * 1024);  // merges with both neighbours: one free block, not split
  s = m.stats();
  EXPECT_EQ(s["inactive_split.all.current"], 0);
  EXPECT_EQ(s["inactive_split_bytes.all.current"], 0);
  EXPECT_EQ(s["allocated_bytes.all.allocated"], 1200 * 1024);
  EXPECT_EQ(s["allocated_bytes.all.freed"], 1200 * 1024);
  EXPECT_EQ(s["active_bytes.all.peak"], 1200 * 1024);
  m.empty_cache();
  s = m.stats();
  EXPECT_EQ(s["reserved_bytes.all.current"], 0);
  EXPECT_EQ(s["num_device_alloc"], 1);
  EXPECT_EQ(s["num_device_free"], 1);
  EXPECT_EQ(s["num_sync_all_streams"], 1);
  EXPECT_EQ(s.size(), 122u);  // PyTorch's key count
}

}  // namespace
}  // namespace cudascope::testing
