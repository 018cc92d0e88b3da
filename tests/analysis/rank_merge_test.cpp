// Merging rank summaries: per-rank rows, each step's fastest / median / slowest rank and by how
// much, steps matched by name or by order, and the formats.
#include <cudascope/analysis/rank_merge.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

using namespace cudascope::analysis;

namespace {

constexpr std::int64_t kMs = 1000000;

StepTimes step(const std::string& name, std::int64_t start_ms, std::int64_t length_ms, std::int64_t exposed_ms = 0) {
  StepTimes t;
  t.name = name;
  t.start_ns = start_ms * kMs;
  t.end_ns = (start_ms + length_ms) * kMs;
  t.compute_ns = length_ms * kMs / 2;
  t.communication_ns = exposed_ms * kMs;
  t.exposed_communication_ns = exposed_ms * kMs;
  t.idle_ns = length_ms * kMs - t.compute_ns - t.exposed_communication_ns;
  return t;
}

// Step lengths in ms, one per step, named ProfilerStep#0...
RankSummary rank(int r, std::vector<std::int64_t> lengths, std::vector<std::int64_t> exposed = {}) {
  RankSummary s;
  s.rank = r;
  s.file = "trace_" + std::to_string(r) + ".json";
  s.host = r < 2 ? "node-a" : "node-b";
  std::int64_t start = 1000 * r;  // each host's clock differs: only lengths are compared
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    s.steps.push_back(step("ProfilerStep#" + std::to_string(i), start, lengths[i], i < exposed.size() ? exposed[i] : 0));
    start += lengths[i];
  }
  return s;
}

TEST(RankMergeTest, EachStepNamesItsSlowestRankAndByHowMuch) {
  // Inputs out of rank order: rows come back by rank.
  const RankReport report = merge_rank_summaries({rank(2, {12, 10}, {0, 4}), rank(0, {10, 10}), rank(1, {11, 14}, {1, 0})});
  ASSERT_EQ(report.ranks.size(), 3u);
  EXPECT_EQ(report.ranks[0].rank, 0);
  EXPECT_EQ(report.ranks[2].rank, 2);
  EXPECT_EQ(report.ranks[1].step_mean_ns, 12500000);
  EXPECT_EQ(report.ranks[1].step_max_ns, 14 * kMs);
  EXPECT_EQ(report.ranks[1].sum.end_ns, 25 * kMs) << "the steps' total length";
  EXPECT_TRUE(report.matched_by_name);
  ASSERT_EQ(report.steps.size(), 2u);
  const StepRow& first = report.steps[0];
  EXPECT_EQ(first.step, "ProfilerStep#0");
  EXPECT_EQ(first.ranks, 3);
  EXPECT_EQ(first.fastest, "0");
  EXPECT_EQ(first.fastest_ns, 10 * kMs);
  EXPECT_EQ(first.median_ns, 11 * kMs);
  EXPECT_EQ(first.slowest, "2");
  EXPECT_EQ(first.over_median_ns(), 1 * kMs);
  EXPECT_EQ(first.over_fastest_ns(), 2 * kMs);
  EXPECT_EQ(first.most_exposed, "1");
  const StepRow& second = report.steps[1];
  EXPECT_EQ(second.slowest, "1");
  EXPECT_EQ(second.over_median_ns(), 4 * kMs);
  EXPECT_EQ(second.most_exposed, "2");
  EXPECT_EQ(second.most_exposed_ns, 4 * kMs);
  EXPECT_EQ(report.slowest_counts, (std::map<std::string, int>{{"1", 1}, {"2", 1}}));
  EXPECT_TRUE(report.notes.empty());
}

TEST(RankMergeTest, RepeatedStepNamesAreMatchedByOrder) {
  RankSummary a = rank(0, {5, 6}), b = rank(1, {7, 3});
  for (RankSummary* s : {&a, &b}) {
    for (StepTimes& t : s->steps) t.name = "train_step";
  }
  const RankReport report = merge_rank_summaries({a, b});
  EXPECT_FALSE(report.matched_by_name);
  ASSERT_EQ(report.steps.size(), 2u);
  EXPECT_EQ(report.steps[0].step, "#0");
  EXPECT_EQ(report.steps[0].slowest, "1");
  EXPECT_EQ(report.steps[1].slowest, "0");
  EXPECT_EQ(report.steps[0].median_ns, 6 * kMs) << "the mean of the two middle values";
}

TEST(RankMergeTest, RanksWithDifferentStepsAreComparedWhereTheyOverlapAndSaidSo) {
  const RankReport report = merge_rank_summaries({rank(0, {5, 5, 5}), rank(1, {6, 6})});
  ASSERT_EQ(report.steps.size(), 3u);
  EXPECT_EQ(report.steps[2].ranks, 1);
  EXPECT_EQ(report.slowest_counts.at("1"), 2) << "a step only one rank has names no slowest rank";
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("2 to 3"), std::string::npos) << report.notes[0];
}

TEST(RankMergeTest, TracesWithoutRankAreLabelledByFileAndDuplicatesNoted) {
  RankSummary none = rank(0, {4});
  none.rank = -1;
  none.file = "single.json";
  const RankReport report = merge_rank_summaries({none, rank(3, {5}), rank(3, {6})});
  EXPECT_EQ(report.ranks.back().label, "single.json") << "unknown ranks last";
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("rank 3 appears in more than one input"), std::string::npos);
}

TEST(RankMergeTest, RanksOfTheWorldWithoutInputAreNamed) {
  std::vector<RankSummary> summaries;
  for (int r : {0, 2, 3, 5}) {
    summaries.push_back(rank(r, {10}));
    summaries.back().world_size = 6;
  }
  const RankReport report = merge_rank_summaries(summaries);
  ASSERT_FALSE(report.notes.empty());
  EXPECT_NE(std::find(report.notes.begin(), report.notes.end(), "2 of the world's 6 ranks have no input: 1, 4"), report.notes.end())
      << ::testing::PrintToString(report.notes);
  summaries.push_back(rank(1, {10}));
  summaries.push_back(rank(4, {10}));
  for (const std::string& note : merge_rank_summaries(summaries).notes) EXPECT_EQ(note.find("no input"), std::string::npos) << note;
}

TEST(RankMergeTest, WithoutStepsTheRowsHoldTheWholeTrace) {
  RankSummary s;
  s.rank = 0;
  s.total = step("all", 100, 40, 10);
  const RankReport report = merge_rank_summaries({s});
  ASSERT_EQ(report.ranks.size(), 1u);
  EXPECT_EQ(report.ranks[0].steps, 0);
  EXPECT_EQ(report.ranks[0].sum.end_ns, 40 * kMs);
  EXPECT_EQ(report.ranks[0].sum.exposed_communication_ns, 10 * kMs);
  EXPECT_TRUE(report.steps.empty());
}

TEST(RankMergeTest, FormatsCarryTheSameFigures) {
  const RankReport report = merge_rank_summaries({rank(0, {10}), rank(1, {13}, {2})});
  const std::string table = format_rank_report(report, StatsFormat::table);
  EXPECT_NE(table.find("Steps across ranks (matched by name)"), std::string::npos) << table;
  EXPECT_NE(table.find("Slowest rank: 1 in 1 of 1 steps"), std::string::npos) << table;
  EXPECT_NE(table.find("node-a"), std::string::npos);

  const auto json = nlohmann::json::parse(format_rank_report(report, StatsFormat::json));
  EXPECT_EQ(json["ranks"][1]["exposed_communication_ns"], 2 * kMs);
  EXPECT_EQ(json["steps"][0]["slowest_over_median_ns"], 1500000);
  EXPECT_EQ(json["steps"][0]["slowest_rank"], "1");

  const std::string csv = format_rank_report(report, StatsFormat::csv);
  EXPECT_EQ(csv.rfind("section,rank,host,steps", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nstep,ProfilerStep#0,2,10.000,0,"), std::string::npos) << csv;
}

}  // namespace
