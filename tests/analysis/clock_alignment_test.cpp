// Clocks of ranks on several hosts (clock_alignment.h): the offset and its error from the ends
// of paired collectives, the one-host rule, alignment through another rank, and what
// `cudascope stats` reports of it (rank_merge.h) from summaries alone.
#include <cudascope/analysis/clock_alignment.h>
#include <cudascope/analysis/rank_merge.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace cudascope::analysis;

namespace {

TEST(ClockAlignmentTest, RecoversAKnownOffset) {
  const std::vector<std::int64_t> reference = {10'000, 25'000, 40'500, 71'000, 90'000};
  std::vector<std::int64_t> shifted;
  for (auto t : reference) shifted.push_back(t - 123'456);  // this rank's clock is 123.456 us behind
  auto a = align_on_collectives(reference, shifted);
  EXPECT_EQ(a.collectives, 5);
  EXPECT_EQ(a.offset_ns, 123'456);
  EXPECT_EQ(a.error_ns, 0) << "exact matches: no error";
  EXPECT_EQ(a.spread_ns, 0);
  EXPECT_FALSE(a.counts_differ);

  // Ends that agree only to within a few us: the median resists one late straggler.
  std::vector<std::int64_t> noisy = shifted;
  noisy[0] += 1'000, noisy[1] -= 1'000, noisy[2] += 500, noisy[4] += 50'000;
  a = align_on_collectives(reference, noisy);
  EXPECT_EQ(a.offset_ns, 123'456 - 500);  // differences 123.456 us - (1, -1, 0.5, 0, 50) us: median at -0.5 us
  EXPECT_EQ(a.error_ns, 500);             // deviations 0.5, 1.5, 0, 0.5, 49.5 us: median 0.5 us
  EXPECT_EQ(a.spread_ns, 51'000);
  EXPECT_LE(std::abs(a.offset_ns - 123'456), a.error_ns) << "the true offset lies within the estimated error";

  // Different counts pair the first ones; none: nothing aligned.
  a = align_on_collectives(reference, {reference[0] + 7, reference[1] + 7});
  EXPECT_EQ(a.collectives, 2);
  EXPECT_EQ(a.offset_ns, -7);
  EXPECT_TRUE(a.counts_differ);
  a = align_on_collectives(reference, {});
  EXPECT_EQ(a.collectives, 0);
  EXPECT_EQ(a.offset_ns, 0);

  EXPECT_TRUE(one_host({"node-a", "", "node-a"}));
  EXPECT_TRUE(one_host({"", ""}));
  EXPECT_FALSE(one_host({"node-a", "node-b"}));
}

// One communicator named `name` with collectives ending at `ends` (each 40 us long), shifted
// by `shift_ns` (the rank's clock error) and `jitter` per collective.
CommunicatorCollectives communicator(const std::string& name, const std::vector<std::int64_t>& ends, std::int64_t shift_ns,
                                     const std::vector<std::int64_t>& jitter = {}) {
  CommunicatorCollectives c;
  c.name = name;
  c.has_sequence = !name.empty();
  for (std::size_t k = 0; k < ends.size(); ++k) {
    const std::int64_t end = ends[k] + shift_ns + (k < jitter.size() ? jitter[k] : 0);
    c.seq.push_back(name.empty() ? -1 : std::int64_t(k + 1));
    c.start_ns.push_back(end - 40'000);
    c.end_ns.push_back(end);
  }
  return c;
}

const std::vector<std::int64_t> kEnds = {1'100'000, 1'200'000, 1'300'000, 1'400'000, 1'500'000};

TEST(ClockAlignmentTest, PlansEachRankAgainstTheLowestOnAnotherHost) {
  // Rank 1 on the reference's host, rank 2 elsewhere 3.2 ms ahead with a few us of jitter,
  // rank 3 elsewhere -2.5 ms and sharing only group "dp13" with rank 1... which shares rank 0's
  // clock, rank 4 without collectives.
  const RankCollectives r0{communicator("world", kEnds, 0)};
  const RankCollectives r1{communicator("world", kEnds, 0), communicator("dp13", kEnds, 0)};
  const RankCollectives r2{communicator("world", kEnds, 3'200'000, {1'000, -2'000, 0, 500, 30'000})};
  const RankCollectives r3{communicator("dp13", kEnds, -2'500'000, {0, 0, 400, -400, 0})};
  const RankCollectives r4;
  const ClockPlan plan =
      plan_rank_clocks({{0, "node-a", &r0}, {1, "node-a", &r1}, {2, "node-b", &r2}, {3, "node-c", &r3}, {4, "node-d", &r4}});
  EXPECT_FALSE(plan.one_host);
  EXPECT_EQ(plan.reference_rank, 0);
  EXPECT_EQ(plan.pairing, CollectivePairing::communicator_and_sequence);
  ASSERT_EQ(plan.ranks.size(), 5u);
  EXPECT_EQ(plan.ranks[0].clock, RankClock::Clock::reference);
  EXPECT_EQ(plan.ranks[1].clock, RankClock::Clock::one_clock) << "the reference's host: its clock";
  EXPECT_EQ(plan.ranks[1].alignment.offset_ns, 0);

  const RankClock& r2_clock = plan.ranks[2];
  EXPECT_EQ(r2_clock.clock, RankClock::Clock::aligned);
  EXPECT_EQ(r2_clock.alignment.collectives, 5);
  EXPECT_EQ(r2_clock.alignment.pairing, CollectivePairing::communicator_and_sequence);
  EXPECT_EQ(r2_clock.alignment.offset_ns, -3'200'500);  // differences -3.2 ms - (1, -2, 0, 0.5, 30) us: median -0.5 us
  // Deviations 0.5, 2.5, 0.5, 0, 29.5 us (median 0.5), widened to the overlap bounds: the parts
  // are 40 us long, so the offset lies in [max(-3240 - jitter), min(-3160 - jitter)] =
  // [-3238, -3190] us, 37.5 us below the estimate at most.
  EXPECT_EQ(r2_clock.alignment.error_ns, 37'500);
  EXPECT_LE(std::abs(r2_clock.alignment.offset_ns - -3'200'000), r2_clock.alignment.error_ns);

  const RankClock& r3_clock = plan.ranks[3];
  EXPECT_EQ(r3_clock.clock, RankClock::Clock::aligned);
  EXPECT_EQ(r3_clock.alignment.via_rank, 1) << "no group shared with rank 0: through rank 1, on rank 0's clock";
  EXPECT_EQ(r3_clock.alignment.offset_ns, 2'500'000);
  // Bounds [2460 + 0.4, 2540 - 0.4] us around 2500 us; rank 1 shares rank 0's clock, so adds none.
  EXPECT_EQ(r3_clock.alignment.error_ns, 39'600);

  EXPECT_EQ(plan.ranks[4].clock, RankClock::Clock::unaligned);
  EXPECT_EQ(plan.ranks[4].own_collectives, 0);
  EXPECT_EQ(plan.ranks[2].own_collectives, 5);
}

// The rank that contributes last ends every collective a little later (30 us here, as seen
// between two H200s): the ends' differences agree closely, so their deviation is small, but
// they all lean one way. The overlap bounds still hold the true offset.
TEST(ClockAlignmentTest, ALagCommonToEveryCollectiveStaysWithinTheError) {
  constexpr std::int64_t kAhead = 3'000'000;  // the rank's clock runs 3 ms ahead
  CommunicatorCollectives reference, rank;
  reference.name = rank.name = "world";
  const std::vector<std::int64_t> jitter = {500, -300, 0, 200, -100, 400, 0};
  for (std::size_t k = 0; k < jitter.size(); ++k) {
    const std::int64_t end = 1'000'000 * std::int64_t(k + 1);
    reference.seq.push_back(std::int64_t(k + 1));
    reference.start_ns.push_back(end - 40'000);
    reference.end_ns.push_back(end);
    // In true time the rank's part starts 5 us after the reference's and ends 30 us after it.
    rank.seq.push_back(std::int64_t(k + 1));
    rank.start_ns.push_back(end - 35'000 + kAhead + jitter[k]);
    rank.end_ns.push_back(end + 30'000 + kAhead + jitter[k]);
  }
  const ClockAlignment a = align_on_paired_collectives({reference}, {rank}, CollectivePairing::communicator_and_sequence);
  EXPECT_EQ(a.collectives, 7);
  EXPECT_EQ(a.offset_ns, -kAhead - 30'000) << "the ends' median carries the lag";
  const ClockAlignment ends_only = align_on_collectives(reference.end_ns, rank.end_ns);
  EXPECT_GT(std::abs(ends_only.offset_ns + kAhead), ends_only.error_ns) << "the deviation alone misses the truth";
  EXPECT_LE(std::abs(a.offset_ns + kAhead), a.error_ns) << "the true offset lies within the error";
}

TEST(ClockAlignmentTest, OneHostUsesTimesAsRecorded) {
  const RankCollectives r0{communicator("", kEnds, 0)};
  const RankCollectives r1{communicator("", kEnds, 2'500'000)};
  const ClockPlan plan = plan_rank_clocks({{0, "node-a", &r0}, {1, "", &r1}});
  EXPECT_TRUE(plan.one_host);
  EXPECT_EQ(plan.pairing, CollectivePairing::order);
  for (const RankClock& c : plan.ranks) {
    EXPECT_EQ(c.clock, RankClock::Clock::one_clock);
    EXPECT_EQ(c.alignment.offset_ns, 0) << "one host, one clock, even where the collectives say otherwise";
  }
}

RankSummary summary(int rank, const std::string& host, RankCollectives communicators) {
  RankSummary s;
  s.rank = rank;
  s.host = host;
  s.file = "trace_" + std::to_string(rank) + ".json";
  s.communicators = std::move(communicators);
  return s;
}

TEST(ClockAlignmentTest, StatsReportsEachRanksOffsetFromSummaries) {
  // Rank 1's clock 7 ms ahead of rank 0's (on another host), its ends within a few us.
  const RankReport report = merge_rank_summaries(
      {summary(1, "node-b", {communicator("", kEnds, 7'000'000, {2'000, -1'000, 0, 1'000, -3'000})}),
       summary(0, "node-a", {communicator("", kEnds, 0)})});
  ASSERT_EQ(report.clocks.ranks.size(), 2u);
  const RankClock& c = report.clocks.ranks[1];
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.clock, RankClock::Clock::aligned);
  EXPECT_EQ(c.alignment.offset_ns, -7'000'000);
  // Bounds [-7040 + 3, -6960 - 2] us around -7000 us (the deviation alone: 1 us).
  EXPECT_EQ(c.alignment.error_ns, 38'000);

  const std::string table = format_rank_report(report, StatsFormat::table);
  EXPECT_NE(table.find("Clocks (the ranks are on more than one host: each aligned to rank 0"), std::string::npos) << table;
  EXPECT_NE(table.find("1     node-b  aligned    -7000.000  38.000    5            order"), std::string::npos) << table;

  const auto json = nlohmann::json::parse(format_rank_report(report, StatsFormat::json));
  const auto& clocks = json.at("clocks");
  EXPECT_EQ(clocks.at("one_host"), false);
  EXPECT_EQ(clocks.at("reference_rank"), 0);
  EXPECT_EQ(clocks.at("ranks")[1].at("offset_ns"), -7'000'000);
  EXPECT_EQ(clocks.at("ranks")[1].at("error_ns"), 38'000);
  EXPECT_EQ(clocks.at("ranks")[1].at("collectives"), 5);
  EXPECT_EQ(clocks.at("ranks")[1].at("paired_by"), "order");
  EXPECT_EQ(clocks.at("ranks")[0].at("clock"), "reference");

  const std::string csv = format_rank_report(report, StatsFormat::csv);
  EXPECT_NE(csv.find("section,rank,host,clock,offset us,error us,collectives,paired by,via rank,spread us,why\n"), std::string::npos)
      << csv;
  EXPECT_NE(csv.find("\nclock,1,node-b,aligned,-7000.000,38.000,5,order,-,5.000,-\n"), std::string::npos) << csv;
}

TEST(ClockAlignmentTest, StatsSaysWhenARankCannotBeAligned) {
  // A summary without collectives (none ran, or written before summaries carried them).
  const RankReport report =
      merge_rank_summaries({summary(0, "node-a", {communicator("", kEnds, 0)}), summary(1, "node-b", {})});
  EXPECT_EQ(report.clocks.ranks[1].clock, RankClock::Clock::unaligned);
  const std::string table = format_rank_report(report, StatsFormat::table);
  EXPECT_NE(table.find("not aligned"), std::string::npos) << table;
  EXPECT_NE(table.find("its input carries no collectives"), std::string::npos) << table;

  // One host: the table adds nothing, the JSON says times are used as recorded.
  const RankReport one = merge_rank_summaries({summary(0, "node-a", {}), summary(1, "node-a", {})});
  EXPECT_EQ(format_rank_report(one, StatsFormat::table).find("Clocks"), std::string::npos);
  EXPECT_EQ(format_rank_report(one, StatsFormat::csv).find("\nclock,"), std::string::npos);
  const auto json = nlohmann::json::parse(format_rank_report(one, StatsFormat::json));
  EXPECT_EQ(json.at("clocks").at("one_host"), true);
  EXPECT_EQ(json.at("clocks").at("ranks")[1].at("clock"), "one clock");
}

}  // namespace
