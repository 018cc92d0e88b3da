// The loaders against Python's figures for the real H200 fixture and its protocol / format
// variants (tests/gui/make_snapshot_fixtures.py wrote both the variants and the figures).
#include "snapshot_test_support.h"

#include <cudascope/analysis/figures.h>

#include <atomic>

namespace cudascope::analysis {
namespace {

using testing::data_path;
using testing::expected_stats;
using testing::load_fixture;

void expect_figures_match(const Snapshot& snap, const nlohmann::json& want) {
  const Figures f = compute_figures(snap);
  EXPECT_EQ(f.segments, want["segments"].get<uint64_t>());
  EXPECT_EQ(f.blocks, want["blocks"].get<uint64_t>());
  EXPECT_EQ(f.trace_entries, want["trace_entries"].get<uint64_t>());
  EXPECT_EQ(f.reserved_bytes, want["reserved_bytes"].get<uint64_t>());
  EXPECT_EQ(f.allocated_bytes, want["allocated_bytes"].get<uint64_t>());
  EXPECT_EQ(f.active_bytes, want["active_bytes"].get<uint64_t>());
  EXPECT_EQ(f.requested_bytes, want["requested_bytes"].get<uint64_t>());
  EXPECT_EQ(f.inactive_bytes, want["inactive_bytes"].get<uint64_t>());
  EXPECT_EQ(f.largest_free_block, want["largest_free_block"].get<uint64_t>());
  EXPECT_EQ(f.internal_fragmentation_bytes, want["internal_fragmentation_bytes"].get<uint64_t>());
  EXPECT_NEAR(f.external_fragmentation_ratio, want["external_fragmentation_ratio"].get<double>(), 1e-12);
  EXPECT_EQ(f.oom_entries, want["oom_entries"].get<uint64_t>());
  for (int a = 0; a < kActionCount; ++a) {
    const std::string name(action_name(static_cast<Action>(a)));
    const uint64_t expected = want["actions"].contains(name) ? want["actions"][name].get<uint64_t>() : 0;
    EXPECT_EQ(f.actions[a], expected) << name;
  }
  ASSERT_EQ(f.streams.size(), want["streams"].size());
  for (size_t i = 0; i < f.streams.size(); ++i) {
    const auto& w = want["streams"][i];
    EXPECT_EQ(f.streams[i].stream, w["stream"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].segments, w["segments"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].blocks, w["blocks"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].trace_entries, w["trace_entries"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].reserved_bytes, w["reserved_bytes"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].allocated_bytes, w["allocated_bytes"].get<uint64_t>());
    EXPECT_EQ(f.streams[i].largest_free_block, w["largest_free_block"].get<uint64_t>());
  }
  EXPECT_EQ(snap.frames.size(), want["distinct_frames"].get<size_t>());
  if (!want["first_entry"].is_null()) {
    ASSERT_FALSE(snap.trace.empty());
    const TraceEntry& first = snap.trace.front();
    EXPECT_EQ(action_name(first.action), want["first_entry"]["action"].get<std::string>());
    EXPECT_EQ(first.addr, want["first_entry"]["addr"].get<uint64_t>());
    EXPECT_EQ(first.size, want["first_entry"]["size"].get<uint64_t>());
    EXPECT_EQ(first.time_us, want["first_entry"]["time_us"].get<int64_t>());
    const TraceEntry& last = snap.trace.back();
    EXPECT_EQ(last.addr, want["last_entry"]["addr"].get<uint64_t>());
    EXPECT_EQ(last.time_us, want["last_entry"]["time_us"].get<int64_t>());
    const auto& top = want["first_entry_top_frame"];
    if (!top.is_null()) {
      ASSERT_FALSE(snap.stack(first.stack).empty());
      const Frame& frame = snap.frames.get(snap.stack(first.stack).front());
      EXPECT_EQ(snap.str(frame.name), top["name"].get<std::string>());
      EXPECT_EQ(snap.str(frame.filename), top["filename"].get<std::string>());
      EXPECT_EQ(frame.line, top["line"].get<int>());
    }
  }
}

class FixtureVariant : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(FixtureVariant, MatchesPythonFigures) {
  const auto [file, stats] = GetParam();
  const Snapshot snap = load_fixture(file);
  expect_figures_match(snap, expected_stats(stats));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, FixtureVariant,
    ::testing::Values(std::pair{"snap_transformer_p4.pickle.gz", "snap_transformer.stats.json"},
                      std::pair{"snap_transformer_p2.pickle.gz", "snap_transformer.stats.json"},
                      std::pair{"snap_transformer_p5.pickle.gz", "snap_transformer.stats.json"},
                      std::pair{"snap_transformer.json.gz", "snap_transformer.stats.json"},
                      std::pair{"snap_small_p5.pickle", "snap_small.stats.json"},
                      std::pair{"snap_small.json", "snap_small.stats.json"}));

TEST(SnapshotLoaderTest, PickleAndJsonGiveIdenticalRecords) {
  const Snapshot p = load_fixture("snap_transformer_p4.pickle.gz");
  const Snapshot j = load_fixture("snap_transformer.json.gz");
  ASSERT_EQ(p.trace.size(), j.trace.size());
  for (size_t i = 0; i < p.trace.size(); ++i) {
    ASSERT_EQ(p.trace[i].addr, j.trace[i].addr) << i;
    ASSERT_EQ(p.trace[i].time_us, j.trace[i].time_us) << i;
    ASSERT_EQ(p.stack_text(p.trace[i].stack), j.stack_text(j.trace[i].stack)) << i;
  }
  ASSERT_EQ(p.blocks.size(), j.blocks.size());
  for (size_t i = 0; i < p.blocks.size(); ++i) {
    EXPECT_EQ(p.blocks[i].address, j.blocks[i].address);
    EXPECT_EQ(p.blocks[i].state, j.blocks[i].state);
    EXPECT_EQ(p.stack_text(p.blocks[i].stack), j.stack_text(j.blocks[i].stack));
  }
  EXPECT_EQ(p.allocator_settings.size(), j.allocator_settings.size());
  EXPECT_EQ(p.annotations.size(), j.annotations.size());
}

TEST(SnapshotLoaderTest, BlocksTileTheirSegments) {
  const Snapshot snap = load_fixture("snap_transformer_p4.pickle.gz");
  for (size_t s = 0; s < snap.segments.size(); ++s) {
    const Segment& seg = snap.segments[s];
    uint64_t cursor = seg.address;
    for (uint32_t b = seg.first_block; b < seg.first_block + seg.block_count; ++b) {
      EXPECT_EQ(snap.blocks[b].address, cursor);
      EXPECT_EQ(snap.blocks[b].segment, s);
      cursor += snap.blocks[b].size;
    }
    EXPECT_EQ(cursor, seg.address + seg.total_size);
  }
}

TEST(SnapshotLoaderTest, ReportsProgressAndHonoursCancel) {
  std::vector<double> seen;
  LoadOptions options;
  options.progress = [&](double f) { seen.push_back(f); };
  auto ok = load_snapshot(data_path("snap_transformer_p2.pickle.gz"), options);
  ASSERT_TRUE(ok) << ok.error().message();
  ASSERT_FALSE(seen.empty());
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));

  std::atomic<bool> cancel{true};
  options.cancel = &cancel;
  auto cancelled = load_snapshot(data_path("snap_transformer_p2.pickle.gz"), options);
  ASSERT_FALSE(cancelled);
  EXPECT_TRUE(cancelled.error().cancelled);
}

TEST(SnapshotLoaderTest, EntriesWithoutTimesAreNumberedPerDevice) {
  // Older PyTorch wrote no time_us: each device's entries get 0, 1, 2... in file order.
  const std::string json =
      R"({"segments": [], "device_traces": [)"
      R"([{"action": "alloc", "addr": 1024, "size": 512, "stream": 0},)"
      R"( {"action": "free_requested", "addr": 1024, "size": 512, "stream": 0}],)"
      R"([{"action": "alloc", "addr": 4096, "size": 512, "stream": 0}]]})";
  auto r = load_snapshot_from_bytes(json, "no_times.json");
  ASSERT_TRUE(r) << r.error().message();
  const Snapshot& snap = r.value();
  EXPECT_FALSE(snap.has_times);
  ASSERT_EQ(snap.trace.size(), 3u);
  EXPECT_EQ(snap.trace[0].time_us, 0);
  EXPECT_EQ(snap.trace[1].time_us, 1);
  EXPECT_EQ(snap.trace[2].device, 1);
  EXPECT_EQ(snap.trace[2].time_us, 0);
}

TEST(SnapshotLoaderTest, InputPastTheBudgetFailsWithTheBudgetMessage) {
  LoadOptions options;
  options.max_input_bytes = 1 << 20;
  // JSON that is valid as far as the reader can tell until its end; plain and as a pickle.
  const std::string json = "{" + std::string(2 << 20, ' ');
  auto r = load_snapshot_from_bytes(json, "spaces.json", options);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("input exceeds the 1 MiB budget"), std::string::npos) << r.error().message();
  // A pickle of one long string: the reader refuses a window past the budget.
  std::string pickle = std::string("\x80\x02X", 3);
  const uint32_t length = 3 << 20;
  pickle.append(reinterpret_cast<const char*>(&length), 4);
  pickle += std::string(length, 'a');
  auto p = load_snapshot_from_bytes(pickle, "long.pickle", options);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("input exceeds the 1 MiB budget"), std::string::npos) << p.error().message();
  // Within the budget the same reader goes on to the real problem.
  options.max_input_bytes = 8 << 20;
  auto q = load_snapshot_from_bytes(pickle, "long.pickle", options);
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().message().find("budget"), std::string::npos) << q.error().message();
}

TEST(SnapshotLoaderTest, MissingFileNamesTheFile) {
  auto r = load_snapshot(data_path("snap_does_not_exist.pickle"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("snap_does_not_exist.pickle"), std::string::npos);
  EXPECT_NE(r.error().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace cudascope::analysis
