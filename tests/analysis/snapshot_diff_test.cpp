// Diffing two snapshots: peaks walked back through the trace, growth by first user frame and
// by NVTX range (compare.h), fragmentation from figures.h.
#include "snapshot_test_support.h"

#include <cudascope/analysis/snapshot_diff.h>

#include <algorithm>
#include <map>

namespace cudascope::analysis {
namespace {

using testing::load_fixture;

// A history that does not start at the beginning: a 4 MiB segment and its block were live
// before the trace; a 20 MiB segment comes and goes inside it. Allocations are made under
// cudascope's NVTX range stack (user_metadata), inside PyTorch-style annotations ("outer"
// from t=11 to 25 holding "step" from 12 to 17), and outside any range (t=30).
Snapshot ranges_snapshot() {
  const std::string json = R"js({"segments": [
    {"device": 0, "address": 1048576, "total_size": 2097152, "stream": 0, "segment_type": "small", "blocks": [
      {"address": 1048576, "size": 1024, "requested_size": 1000, "state": "active_allocated"},
      {"address": 1049600, "size": 2048, "requested_size": 2000, "state": "active_allocated"},
      {"address": 1051648, "size": 512, "requested_size": 512, "state": "active_allocated"},
      {"address": 1052160, "size": 512, "requested_size": 512, "state": "active_allocated"},
      {"address": 1052672, "size": 2093056, "requested_size": 0, "state": "inactive"}]},
    {"device": 0, "address": 4194304, "total_size": 4194304, "stream": 0, "segment_type": "large", "blocks": [
      {"address": 4194304, "size": 4194304, "requested_size": 4194304, "state": "active_allocated"}]}],
   "device_traces": [[
    {"action": "segment_alloc", "addr": 1048576, "size": 2097152, "stream": 0, "time_us": 10},
    {"action": "alloc", "addr": 1048576, "size": 1000, "stream": 0, "time_us": 11, "user_metadata": "train;forward"},
    {"action": "alloc", "addr": 1049600, "size": 2000, "stream": 0, "time_us": 12},
    {"action": "segment_alloc", "addr": 8388608, "size": 20971520, "stream": 0, "time_us": 13},
    {"action": "alloc", "addr": 8388608, "size": 20971520, "stream": 0, "time_us": 14},
    {"action": "free_requested", "addr": 8388608, "size": 20971520, "stream": 0, "time_us": 15},
    {"action": "free_completed", "addr": 8388608, "size": 20971520, "stream": 0, "time_us": 16},
    {"action": "segment_free", "addr": 8388608, "size": 20971520, "stream": 0, "time_us": 17},
    {"action": "alloc", "addr": 1052160, "size": 512, "stream": 0, "time_us": 18},
    {"action": "alloc", "addr": 1051648, "size": 512, "stream": 0, "time_us": 30}]],
   "external_annotations": [
    {"stage": "START", "name": "outer", "device": 0, "time_us": 11},
    {"stage": "START", "name": "step", "device": 0, "time_us": 12},
    {"stage": "END", "name": "step", "device": 0, "time_us": 17},
    {"stage": "END", "name": "outer", "device": 0, "time_us": 25}],
   "allocator_settings": {}})js";
  auto result = load_snapshot_from_bytes(json, "ranges.json");
  if (!result) {
    ADD_FAILURE() << result.error().message();
    return Snapshot{};
  }
  return std::move(result).value();
}

TEST(SnapshotDiffTest, PeaksWalkBackFromTheFinalStateWhenTheHistoryStartsLate) {
  const Figures f = compute_figures(ranges_snapshot());
  EXPECT_EQ(f.reserved_bytes, 2097152u + 4194304u);
  // The 20 MiB segment was reserved (t=13..17) on top of both segments the snapshot ends with.
  EXPECT_EQ(f.peak_reserved_bytes, 2097152u + 4194304u + 20971520u);
  // Requested sizes, as the trace records them: the pre-trace 4 MiB block, the two first
  // allocations and the 20 MiB one were live together at t=14.
  EXPECT_EQ(f.peak_allocated_bytes, 4194304u + 1000u + 2000u + 20971520u);
}

TEST(SnapshotDiffTest, PeaksEqualAForwardWalkFromEmptyWhenTheTraceStartsAtTheBeginning) {
  const Snapshot s = load_fixture("snap_transformer_p4.pickle.gz");
  ASSERT_FALSE(s.trace.empty());
  ASSERT_EQ(s.trace.front().action, Action::segment_alloc);
  const Figures f = compute_figures(s);
  // Every segment the snapshot holds was allocated inside the trace, so the state before
  // the trace was empty, and walking forward from zero is a second, independent way.
  ASSERT_EQ(f.actions[size_t(Action::segment_alloc)] - f.actions[size_t(Action::segment_free)], f.segments);
  int64_t reserved = 0, live = 0, peak_reserved = 0, peak_live = 0;
  for (const TraceEntry& e : s.trace) {
    if (e.action == Action::segment_alloc) reserved += int64_t(e.size);
    if (e.action == Action::segment_free) reserved -= int64_t(e.size);
    if (e.action == Action::alloc) live += int64_t(e.size);
    if (e.action == Action::free_completed) live -= int64_t(e.size);
    peak_reserved = std::max(peak_reserved, reserved);
    peak_live = std::max(peak_live, live);
  }
  EXPECT_EQ(f.peak_reserved_bytes, uint64_t(peak_reserved));
  EXPECT_EQ(f.peak_allocated_bytes, uint64_t(peak_live));
  EXPECT_GE(f.peak_reserved_bytes, f.reserved_bytes);
}

TEST(SnapshotDiffTest, NvtxGroupsComeFromTheRangeStackElseTheInnermostAnnotation) {
  const Snapshot s = ranges_snapshot();
  const Comparison c = compare_snapshots(Snapshot{}, s, GroupBy::nvtx_range);
  std::map<std::string, uint64_t> bytes;
  for (const CompareRow& r : c.rows) bytes[r.frame] = r.bytes_b;
  const std::map<std::string, uint64_t> expected = {{"train;forward", 1024},
                                                    {"step", 2048},
                                                    {"outer", 512},
                                                    {"<no NVTX range>", 512},
                                                    {"<allocated before the trace>", 4194304}};
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(nvtx_range_key(s, s.trace[2]), "step");
  EXPECT_EQ(c.total_b, compute_figures(s).active_bytes);
}

TEST(SnapshotDiffTest, RealGrowthIsInBothGroupingsAndTheirSumsAreTheLiveTotals) {
  const Snapshot small = load_fixture("snap_small_p5.pickle");
  const Snapshot full = load_fixture("snap_transformer_p4.pickle.gz");
  const SnapshotDiff d = diff_snapshots(small, full);
  EXPECT_EQ(d.a.reserved_bytes, compute_figures(small).reserved_bytes);
  EXPECT_EQ(d.b.peak_reserved_bytes, compute_figures(full).peak_reserved_bytes);
  EXPECT_GT(d.b.peak_reserved_bytes, d.a.peak_reserved_bytes);
  EXPECT_DOUBLE_EQ(fragmentation_percent(d.b), 100.0 * compute_figures(full).external_fragmentation_ratio);
  for (const Comparison* c : {&d.by_user_frame, &d.by_nvtx_range}) {
    uint64_t a = 0, b = 0;
    for (const CompareRow& r : c->rows) a += r.bytes_a, b += r.bytes_b;
    EXPECT_EQ(a, d.a.active_bytes);
    EXPECT_EQ(b, d.b.active_bytes);
    EXPECT_EQ(c->total_b - c->total_a, d.b.active_bytes - d.a.active_bytes);
  }
  // The training script's optimizer state is allocated inside PyTorch's Optimizer.step
  // annotation; its growth shows under that name.
  const auto step = std::find_if(d.by_nvtx_range.rows.begin(), d.by_nvtx_range.rows.end(),
                                 [](const CompareRow& r) { return r.frame == "Optimizer.step#AdamW.step"; });
  ASSERT_NE(step, d.by_nvtx_range.rows.end());
  EXPECT_GT(step->delta(), 0);
}

TEST(SnapshotDiffTest, ASnapshotAgainstItselfChangesNothing) {
  const Snapshot a = load_fixture("snap_transformer_p4.pickle.gz");
  const Snapshot b = load_fixture("snap_transformer.json.gz");
  const SnapshotDiff d = diff_snapshots(a, b);
  EXPECT_EQ(d.a.peak_reserved_bytes, d.b.peak_reserved_bytes);
  EXPECT_EQ(d.a.peak_allocated_bytes, d.b.peak_allocated_bytes);
  for (const Comparison* c : {&d.by_user_frame, &d.by_nvtx_range})
    for (const CompareRow& r : c->rows) EXPECT_EQ(r.delta(), 0) << r.frame;
}

}  // namespace
}  // namespace cudascope::analysis
