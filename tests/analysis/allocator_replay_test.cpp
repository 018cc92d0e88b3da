// State at an entry: checked against Python's figures at selected entries, against the
// snapshot's own final state, and for incremental cost while scrubbing.
#include "snapshot_test_support.h"

#include <cudascope/analysis/allocator_replay.h>
#include <cudascope/analysis/figures.h>

namespace cudascope::analysis {
namespace {

using testing::expected_stats;
using testing::load_fixture;

class AllocatorReplayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { snap_ = new Snapshot(load_fixture("snap_transformer_p4.pickle.gz")); }
  static void TearDownTestSuite() { delete snap_; }
  static Snapshot* snap_;
};
Snapshot* AllocatorReplayTest::snap_ = nullptr;

void expect_tiles(const AllocatorState& state) {
  for (const StateSegment& s : state.segments) {
    uint64_t cursor = s.address;
    for (const StateBlock& b : s.blocks) {
      ASSERT_EQ(b.address, cursor) << "blocks must tile their segment";
      cursor += b.size;
    }
    ASSERT_EQ(cursor, s.address + s.size);
  }
}

TEST_F(AllocatorReplayTest, LastEntryIsTheSnapshotsOwnState) {
  AllocatorReplay replay(*snap_, 0);
  const AllocatorState state = replay.state_after(replay.end_entry() - 1);
  const Figures f = compute_figures(*snap_);
  EXPECT_EQ(state.reserved_bytes, f.reserved_bytes);
  EXPECT_EQ(state.allocated_bytes, f.allocated_bytes);
  EXPECT_EQ(state.active_bytes, f.active_bytes);
  EXPECT_EQ(state.largest_free_block, f.largest_free_block);
  EXPECT_EQ(state.segments.size(), snap_->segments.size());
  expect_tiles(state);
}

TEST_F(AllocatorReplayTest, MatchesPythonAtSelectedEntries) {
  const auto want = expected_stats("snap_transformer.stats.json")["after_entry"];
  ASSERT_GE(want.size(), 5u);
  AllocatorReplay replay(*snap_, 0);
  for (const auto& [entry, figures] : want.items()) {
    const AllocatorState state = replay.state_after(std::stoll(entry));
    EXPECT_EQ(state.active_bytes, figures["active_bytes"].get<uint64_t>()) << "after entry " << entry;
    EXPECT_EQ(state.reserved_bytes, figures["reserved_bytes"].get<uint64_t>()) << "after entry " << entry;
    expect_tiles(state);
  }
  EXPECT_EQ(replay.anomalies(), 0u);
}

TEST_F(AllocatorReplayTest, BeforeTheTraceNothingTracedIsLive) {
  AllocatorReplay replay(*snap_, 0);
  const AllocatorState state = replay.state_after(-1);
  // The fixture's trace starts with the process: no segment existed before its first entry.
  EXPECT_EQ(state.reserved_bytes, 0u);
  EXPECT_EQ(state.active_bytes, 0u);
}

TEST_F(AllocatorReplayTest, ScrubbingOneEntryCostsOneStep) {
  AllocatorReplay replay(*snap_, 0);
  const int64_t mid = (replay.first_entry() + replay.end_entry()) / 2;
  replay.state_after(mid);
  for (int64_t e = mid + 1; e < mid + 50; ++e) {
    replay.state_after(e);
    EXPECT_EQ(replay.last_steps(), 1u);
  }
  for (int64_t e = mid + 48; e > mid; --e) {
    replay.state_after(e);
    EXPECT_EQ(replay.last_steps(), 1u);
  }
}

TEST_F(AllocatorReplayTest, JumpsAreBoundedByHalfTheCheckpointSpacing) {
  AllocatorReplay replay(*snap_, 0);
  AllocatorReplay stepper(*snap_, 0);
  for (int64_t e : {7000, 100, 12000, 3333, 13258, 0, 6500}) {
    const AllocatorState jumped = replay.state_after(e);
    EXPECT_LE(replay.last_steps(), replay.spacing() / 2 + 1) << e;
    // Same state as walking there one entry at a time.
    AllocatorState walked;
    const int64_t from = stepper.state_after(e > 50 ? e - 50 : 0).entry;
    for (int64_t i = from + 1; i <= e; ++i) walked = stepper.state_after(i);
    if (from == e) walked = stepper.state_after(e);
    ASSERT_EQ(jumped.segments.size(), walked.segments.size());
    EXPECT_EQ(jumped.active_bytes, walked.active_bytes);
    EXPECT_EQ(jumped.allocated_bytes, walked.allocated_bytes);
    for (size_t s = 0; s < jumped.segments.size(); ++s) ASSERT_EQ(jumped.segments[s].blocks.size(), walked.segments[s].blocks.size());
  }
}

TEST_F(AllocatorReplayTest, PendingFreeBlocksAppearBetweenRequestAndCompletion) {
  AllocatorReplay replay(*snap_, 0);
  // Find a free_requested entry whose completion comes later.
  for (uint32_t i = replay.first_entry(); i + 1 < replay.end_entry(); ++i) {
    const TraceEntry& e = snap_->trace[i];
    if (e.action != Action::free_requested) continue;
    const AllocatorState state = replay.state_after(i);
    bool found = false;
    for (const auto& s : state.segments)
      for (const auto& b : s.blocks)
        if (b.address == e.addr) {
          EXPECT_EQ(b.state, BlockState::active_pending_free);
          EXPECT_NE(b.alloc_entry, UINT32_MAX);
          found = true;
        }
    EXPECT_TRUE(found);
    return;
  }
  FAIL() << "fixture has no free_requested entry";
}

}  // namespace
}  // namespace cudascope::analysis
