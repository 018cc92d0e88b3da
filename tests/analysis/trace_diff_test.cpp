// Diffing two traces: per-name totals from each trace's stats, and the noise estimate
// checked against a direct computation from the events' durations.
#include <cudascope/analysis/trace_diff.h>
#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace cudascope::analysis {
namespace {

std::string data_path(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA) + "/" + name; }

std::unique_ptr<TraceModel> load(const std::string& name) {
  TraceLoadResult r = load_trace(data_path(name));
  EXPECT_TRUE(r.ok()) << r.error;
  return std::move(r.model);
}

// Each kernel's durations, straight from the events.
std::map<std::string, std::vector<double>> kernel_durations(const TraceModel& m) {
  std::map<std::string, std::vector<double>> out;
  for (size_t i = 0; i < m.event_count(); ++i) {
    const auto& e = m.event(i);
    if (e.ph == 'X' && m.cat(e) == "kernel") out[std::string(m.name(e))].push_back(double(e.dur_ns));
  }
  return out;
}

// Two-pass sample variance, NaN below two values.
double sample_variance(const std::vector<double>& v) {
  if (v.size() < 2) return std::nan("");
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / double(v.size() - 1);
}

TEST(TraceDiffTest, TwoRealRunsMatchTheirStatsAndTheNoiseOfTheirInstances) {
  const auto a = load("kineto_train_h100_s3.json.gz");
  const auto b = load("kineto_train_h100_s2.json.gz");
  ASSERT_TRUE(a && b);
  const TraceStats sa = compute_stats(*a), sb = compute_stats(*b);
  const TraceDiff d = diff_traces(sa, sb);
  EXPECT_EQ(d.kernel_total.total_a_ns, sa.kernel_total_ns);
  EXPECT_EQ(d.kernel_total.total_b_ns, sb.kernel_total_ns);
  const auto da = kernel_durations(*a), db = kernel_durations(*b);
  size_t names = da.size();
  for (const auto& [name, v] : db) names += da.count(name) ? 0 : 1;
  ASSERT_EQ(d.kernels.size(), names);
  double total_variance = 0;
  for (const TimeDiffRow& r : d.kernels) {
    const std::vector<double> none;
    const auto& va = da.count(r.name) ? da.at(r.name) : none;
    const auto& vb = db.count(r.name) ? db.at(r.name) : none;
    EXPECT_EQ(r.count_a, int64_t(va.size())) << r.name;
    EXPECT_EQ(r.count_b, int64_t(vb.size())) << r.name;
    double var_a = sample_variance(va), var_b = sample_variance(vb);
    if (std::isnan(var_a)) var_a = var_b;
    if (std::isnan(var_b)) var_b = var_a;
    if (std::isnan(var_a)) {
      EXPECT_FALSE(r.has_noise()) << r.name;
      continue;
    }
    const double expected = std::sqrt(double(va.size()) * var_a + double(vb.size()) * var_b);
    total_variance += expected * expected;
    EXPECT_NEAR(r.noise_ns, expected, 1e-6 * expected + 1e-3) << r.name;
    EXPECT_EQ(r.within_noise(), std::fabs(double(r.delta_ns())) <= 2 * expected) << r.name;
  }
  EXPECT_NEAR(d.kernel_total.noise_ns, std::sqrt(total_variance), 1e-6 * std::sqrt(total_variance));
  // Rows come largest change first.
  for (size_t i = 1; i < d.kernels.size(); ++i) EXPECT_GE(std::llabs(d.kernels[i - 1].delta_ns()), std::llabs(d.kernels[i].delta_ns()));
  // Three training steps against two: the kernels ran less often in B.
  EXPECT_LT(d.kernel_total.count_b, d.kernel_total.count_a);
  EXPECT_FALSE(d.copies.empty());
  int64_t copy_bytes_a = 0;
  for (const CopyStat& c : sa.copies) copy_bytes_a += c.bytes;
  EXPECT_EQ(d.copy_total.bytes_a, copy_bytes_a);
}

TEST(TraceDiffTest, ATraceAgainstItselfChangesNothingAndIsWithinNoise) {
  const auto a = load("train_h100_kineto.json.gz");
  ASSERT_TRUE(a);
  const TraceStats s = compute_stats(*a);
  const TraceDiff d = diff_traces(s, s);
  ASSERT_FALSE(d.kernels.empty());
  ASSERT_FALSE(d.ranges.empty());
  for (const auto* rows : {&d.kernels, &d.ranges})
    for (const TimeDiffRow& r : *rows) {
      EXPECT_EQ(r.delta_ns(), 0) << r.name;
      EXPECT_EQ(r.delta_percent(), 0.0) << r.name;
      if (r.has_noise()) {
        EXPECT_TRUE(r.within_noise()) << r.name;
      }
    }
}

TEST(TraceDiffTest, ASingleInstanceBorrowsTheOtherSidesSpreadAndTwoSinglesHaveNoEstimate) {
  auto stat = [](const char* name, std::vector<int64_t> durations) {
    DurationStat s;
    s.name = name;
    for (int64_t d : durations) ++s.count, s.total_ns += d, s.sum_squares_ns2 += double(d) * double(d);
    return s;
  };
  TraceStats a, b;
  a.kernels = {stat("k", {100, 200, 300}), stat("once", {1000})};
  b.kernels = {stat("k", {400}), stat("once", {5000}), stat("new", {7, 9})};
  const TraceDiff d = diff_traces(a, b);
  std::map<std::string, TimeDiffRow> rows;
  for (const auto& r : d.kernels) rows[r.name] = r;
  // s^2 of {100, 200, 300} is 10000; B's single instance borrows it: sqrt(3 * 1e4 + 1 * 1e4).
  EXPECT_DOUBLE_EQ(rows["k"].noise_ns, std::sqrt(4e4));
  EXPECT_FALSE(rows["once"].has_noise());
  EXPECT_TRUE(std::isinf(rows["new"].delta_percent()));
  EXPECT_EQ(rows["new"].count_a, 0);
  // The total adds the variances of the names that have one.
  EXPECT_DOUBLE_EQ(d.kernel_total.noise_ns, std::sqrt(4e4 + 2 * 2.0));
  EXPECT_EQ(d.kernel_total.total_b_ns, 400 + 5000 + 16);
}

}  // namespace
}  // namespace cudascope::analysis
