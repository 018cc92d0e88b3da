// Comparing snapshots: growth grouped by allocating frame.
#include "snapshot_test_support.h"

#include <cudascope/analysis/compare.h>
#include <cudascope/analysis/figures.h>

namespace cudascope::analysis {
namespace {

using testing::load_fixture;

TEST(CompareTest, ASnapshotAgainstItselfHasNoGrowth) {
  const Snapshot a = load_fixture("snap_transformer_p4.pickle.gz");
  const Snapshot b = load_fixture("snap_transformer_p2.pickle.gz");
  const Comparison c = compare_snapshots(a, b);
  EXPECT_EQ(c.total_a, compute_figures(a).active_bytes);
  EXPECT_EQ(c.total_a, c.total_b);
  for (const auto& row : c.rows) EXPECT_EQ(row.delta(), 0) << row.frame;
}

TEST(CompareTest, GrowthIsGroupedByFrameAndSumsToTheTotals) {
  const Snapshot small = load_fixture("snap_small_p5.pickle");
  const Snapshot full = load_fixture("snap_transformer_p4.pickle.gz");
  const Comparison c = compare_snapshots(small, full, GroupBy::user_frame);
  EXPECT_EQ(c.total_a, compute_figures(small).active_bytes);
  EXPECT_EQ(c.total_b, compute_figures(full).active_bytes);
  uint64_t sum_a = 0, sum_b = 0;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    sum_a += c.rows[i].bytes_a;
    sum_b += c.rows[i].bytes_b;
    if (i) {
      EXPECT_GE(c.rows[i - 1].delta(), c.rows[i].delta());
    }
  }
  EXPECT_EQ(sum_a, c.total_a);
  EXPECT_EQ(sum_b, c.total_b);
  // The fixture's training script is the user code: its frames lead the growth.
  ASSERT_FALSE(c.rows.empty());
  EXPECT_NE(c.rows.front().frame.find("train_transformer.py"), std::string::npos) << c.rows.front().frame;
}

TEST(CompareTest, UserFrameSkipsLibraryFrames) {
  const Snapshot s = load_fixture("snap_transformer_p4.pickle.gz");
  for (const Block& b : s.blocks) {
    if (s.stack(b.stack).size() < 3) continue;
    const std::string top = group_key(s, b.stack, GroupBy::top_frame);
    const std::string user = group_key(s, b.stack, GroupBy::user_frame);
    EXPECT_NE(top.find("torch/"), std::string::npos) << top;
    EXPECT_NE(user.find("train_transformer.py"), std::string::npos) << user;
    return;
  }
  FAIL() << "no block with a stack";
}

}  // namespace
}  // namespace cudascope::analysis
