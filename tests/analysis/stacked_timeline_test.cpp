// The stacked timeline: exact envelope at every zoom, nothing dropped (drawn, merged or
// counted as churn), hit testing consistent with what is drawn.
#include "snapshot_test_support.h"

#include <cudascope/analysis/stacked_timeline.h>

#include <cmath>
#include <set>

namespace cudascope::analysis {
namespace {

using testing::expected_stats;
using testing::load_fixture;

class StackedTimelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    snap_ = new Snapshot(load_fixture("snap_transformer_p4.pickle.gz"));
    timeline_ = new StackedTimeline(StackedTimeline::build(*snap_, 0, StackedTimeline::Kind::allocations));
  }
  static void TearDownTestSuite() {
    delete timeline_;
    delete snap_;
  }
  static Snapshot* snap_;
  static StackedTimeline* timeline_;
};
Snapshot* StackedTimelineTest::snap_ = nullptr;
StackedTimeline* StackedTimelineTest::timeline_ = nullptr;

TEST_F(StackedTimelineTest, PeakMatchesPython) {
  EXPECT_EQ(timeline_->peak_bytes(), expected_stats("snap_transformer.stats.json")["peak_active_bytes"].get<uint64_t>());
  EXPECT_EQ(timeline_->live_bytes_after(timeline_->event_count() - 1),
            expected_stats("snap_transformer.stats.json")["active_bytes"].get<uint64_t>());
  // One interval per alloc in the trace (every alloc in the fixture is traced).
  EXPECT_EQ(timeline_->intervals().size(), 4587u);
}

TEST_F(StackedTimelineTest, FullZoomOutShowsTheExactPeakAndDrawnHeightsMatchBytes) {
  const int W = 800, H = 300;
  const TimelineView view{timeline_->begin_us(), timeline_->end_us(), timeline_->peak_bytes(), W, H};
  std::vector<uint32_t> pixels(W * H);
  std::vector<TimelineColumn> columns;
  timeline_->render(view, pixels.data(), W, &columns);
  uint64_t max_live = 0;
  for (int x = 0; x < W; ++x) {
    max_live = std::max(max_live, columns[x].live_bytes);
    int drawn = 0;
    for (int y = 0; y < H; ++y) drawn += pixels[y * W + x] != StackedTimeline::kBackground;
    const double expected = double(columns[x].live_bytes) * H / double(view.bytes_max);
    // Exact up to rounding, plus at most one row: a sub-pixel run on top still gets a row.
    EXPECT_GE(drawn, std::lround(expected)) << "column " << x;
    EXPECT_LE(drawn, std::lround(expected) + 1) << "column " << x;
  }
  EXPECT_EQ(max_live, timeline_->peak_bytes());
  std::set<uint32_t> colours(pixels.begin(), pixels.end());
  EXPECT_GT(colours.size(), 10u);
}

TEST_F(StackedTimelineTest, EveryIntervalIsDrawnOrCountedAsChurn) {
  for (int W : {200, 1000}) {
    const TimelineView view{timeline_->begin_us(), timeline_->end_us(), timeline_->peak_bytes(), W, 100};
    std::vector<uint32_t> pixels(W * 100);
    std::vector<TimelineColumn> columns;
    timeline_->render(view, pixels.data(), W, &columns);
    uint64_t churn = 0;
    for (const auto& c : columns) churn += c.churn;
    // Each column's count equals the definition, counted here the slow way.
    for (size_t x = 0; x < columns.size(); ++x) {
      const auto& c = columns[x];
      uint32_t expected = 0;
      for (uint32_t id = 0; id < timeline_->intervals().size(); ++id) {
        const auto [b, e] = timeline_->interval_events(id);
        if (b == UINT32_MAX || b < c.first_event || b >= c.end_event) continue;
        const bool live_at_peak = int64_t(b) <= c.event && (e == UINT32_MAX || int64_t(e) > c.event);
        expected += !live_at_peak;
      }
      ASSERT_EQ(c.churn, expected) << "column " << x << " at width " << W;
    }
    size_t drawn = 0, churned = 0;
    for (uint32_t id = 0; id < timeline_->intervals().size(); ++id) {
      const auto [b, e] = timeline_->interval_events(id);
      bool live_somewhere = false;
      for (const auto& c : columns) {
        const bool begun = b == UINT32_MAX || int64_t(b) <= c.event;
        const bool not_ended = e == UINT32_MAX || int64_t(e) > c.event;
        if (c.event >= -1 && begun && not_ended) live_somewhere = true;
      }
      if (live_somewhere) {
        ++drawn;
        continue;
      }
      // Not live at any column's peak: its column must count it.
      bool counted = false;
      for (const auto& c : columns)
        if (b >= c.first_event && b < c.end_event && c.churn > 0) counted = true;
      EXPECT_TRUE(counted) << "interval " << id << " neither drawn nor counted at width " << W;
      ++churned;
    }
    // Churn counts each interval not live at its own column's peak; some of those are
    // live at a later column's peak, so it bounds the undrawn ones from above.
    EXPECT_LE(churned, churn) << "width " << W;
    EXPECT_GT(drawn, 0u);
  }
}

TEST_F(StackedTimelineTest, ZoomedInShowsOnlyItsTimeRange) {
  const int64_t mid = (timeline_->begin_us() + timeline_->end_us()) / 2;
  const TimelineView view{mid, mid + 2000, timeline_->peak_bytes(), 400, 200};
  std::vector<uint32_t> pixels(400 * 200);
  std::vector<TimelineColumn> columns;
  timeline_->render(view, pixels.data(), 400, &columns);
  for (const auto& c : columns)
    if (c.end_event > c.first_event) {
      EXPECT_GE(timeline_->event_time(c.first_event), mid);
      EXPECT_LE(timeline_->event_time(c.end_event - 1), mid + 2000);
    }
}

TEST_F(StackedTimelineTest, HitTestFindsTheBandUnderThePointer) {
  const int W = 600, H = 400;
  const TimelineView view{timeline_->begin_us(), timeline_->end_us(), timeline_->peak_bytes(), W, H};
  std::vector<uint32_t> pixels(W * H);
  std::vector<TimelineColumn> columns;
  timeline_->render(view, pixels.data(), W, &columns);
  int hits = 0;
  for (int x = 0; x < W; x += 37)
    for (int y = 0; y < H; y += 23) {
      const uint32_t px = pixels[y * W + x];
      const auto hit = timeline_->hit(view, x, y);
      if (px == StackedTimeline::kBackground) {
        EXPECT_FALSE(hit.has_value()) << x << "," << y;
        continue;
      }
      ASSERT_TRUE(hit.has_value()) << x << "," << y;
      ASSERT_FALSE(hit->intervals.empty());
      if (!hit->merged) EXPECT_EQ(px, StackedTimeline::colour(hit->intervals.front())) << x << "," << y;
      else EXPECT_EQ(px, StackedTimeline::kMergedColour);
      ++hits;
    }
  EXPECT_GT(hits, 20);
}

TEST_F(StackedTimelineTest, SegmentTimelineEndsAtReservedBytes) {
  const auto segments = StackedTimeline::build(*snap_, 0, StackedTimeline::Kind::segments);
  EXPECT_EQ(segments.intervals().size(), snap_->segments.size());
  EXPECT_EQ(segments.live_bytes_after(segments.event_count() - 1),
            expected_stats("snap_transformer.stats.json")["reserved_bytes"].get<uint64_t>());
}

}  // namespace
}  // namespace cudascope::analysis
