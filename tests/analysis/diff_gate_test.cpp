// --fail-if gates: the grammar (good and bad expressions), units, and evaluation against
// trace and snapshot diffs.
#include "snapshot_test_support.h"

#include <cudascope/analysis/diff_gate.h>

namespace cudascope::analysis {
namespace {

DiffGate parse(const std::string& text) {
  auto parsed = parse_diff_gate(text);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    ADD_FAILURE() << text << ": " << *error;
    return {};
  }
  return std::get<DiffGate>(parsed);
}

std::string parse_error(const std::string& text) {
  auto parsed = parse_diff_gate(text);
  if (auto* error = std::get_if<std::string>(&parsed)) return *error;
  ADD_FAILURE() << text << " parsed";
  return {};
}

TEST(DiffGateTest, ParsesRelativeAndAbsoluteChangesInTheMetricsUnits) {
  DiffGate g = parse("peak_reserved>+5%");
  EXPECT_EQ(g.metric, "peak_reserved");
  EXPECT_EQ(g.op, ">");
  EXPECT_TRUE(g.relative);
  EXPECT_EQ(g.threshold, 5.0);
  EXPECT_EQ(g.kind, FileKind::snapshot);

  g = parse(" peak_allocated >= +100MiB ");
  EXPECT_FALSE(g.relative);
  EXPECT_EQ(g.op, ">=");
  EXPECT_EQ(g.threshold, 100.0 * 1024 * 1024);

  g = parse("fragmentation>+2%");  // points, not a share of A
  EXPECT_FALSE(g.relative);
  EXPECT_EQ(g.threshold, 2.0);
  EXPECT_EQ(parse("fragmentation>2pp").threshold, 2.0);

  g = parse("kernel_time<-1.5ms");
  EXPECT_EQ(g.kind, FileKind::trace);
  EXPECT_EQ(g.threshold, -1.5e6);
  EXPECT_EQ(parse("copy_bytes>+0").threshold, 0.0);
  EXPECT_EQ(parse("copy_time[HtoD]>250us").threshold, 250e3);

  // Kernel names hold brackets and operators of their own: the name runs to the last ']'.
  g = parse("kernel_time[void k<(int)2>(float[4], at::Array<char*, 3>)]>+3%");
  ASSERT_TRUE(g.name);
  EXPECT_EQ(*g.name, "void k<(int)2>(float[4], at::Array<char*, 3>)");
  EXPECT_TRUE(g.relative);
}

TEST(DiffGateTest, BadExpressionsAreErrorsNamingTheExpression) {
  const std::pair<std::string, std::string> cases[] = {
      {"peak_memory>+5%", "unknown metric 'peak_memory'"},
      {">+5%", "expected a metric first"},
      {"peak_reserved+5%", "expected an operator"},
      {"peak_reserved>", "expected a change"},
      {"peak_reserved>+five%", "expected a change"},
      {"peak_reserved>+5ms", "unit 'ms' does not fit peak_reserved"},
      {"kernel_time>+5MiB", "unit 'MiB' does not fit kernel_time"},
      {"fragmentation>+2MiB", "does not fit fragmentation"},
      {"nvtx_time>+10%", "needs a name"},
      {"peak_reserved[x]>+5%", "takes no [NAME]"},
      {"kernel_time[>+3%", "without its closing ']'"},
      {"kernel_time[]>+3%", "an empty name"},
  };
  for (const auto& [text, problem] : cases) {
    const std::string error = parse_error(text);
    EXPECT_NE(error.find("'" + text + "'"), std::string::npos) << error;
    EXPECT_NE(error.find(problem), std::string::npos) << text << " -> " << error;
  }
  EXPECT_NE(parse_error("bogus>1").find("metrics: peak_reserved"), std::string::npos);
}

TraceDiff kernel_diff(int64_t a_ns, int64_t b_ns) {
  TraceDiff d;
  d.kernel_total.name = "all kernels";
  d.kernel_total.total_a_ns = a_ns, d.kernel_total.total_b_ns = b_ns;
  d.kernel_total.noise_ns = 1e6;
  TimeDiffRow row = d.kernel_total;
  row.name = "gemm";
  d.kernels.push_back(row);
  return d;
}

GateResult evaluate(const std::string& text, const TraceDiff& d) {
  auto r = evaluate_gate(parse(text), d);
  if (auto* error = std::get_if<std::string>(&r)) {
    ADD_FAILURE() << *error;
    return {};
  }
  return std::get<GateResult>(r);
}

TEST(DiffGateTest, AGateFailsExactlyWhenTheChangeCrossesItsThreshold) {
  const TraceDiff d = kernel_diff(100'000'000, 104'000'000);  // +4%, +4 ms
  EXPECT_TRUE(evaluate("kernel_time>+3%", d).failed);
  EXPECT_FALSE(evaluate("kernel_time>+5%", d).failed);
  EXPECT_FALSE(evaluate("kernel_time>+4%", d).failed);
  EXPECT_TRUE(evaluate("kernel_time>=+4%", d).failed);
  EXPECT_TRUE(evaluate("kernel_time>3ms", d).failed);
  EXPECT_FALSE(evaluate("kernel_time>4ms", d).failed);
  EXPECT_FALSE(evaluate("kernel_time<-3%", d).failed);
  EXPECT_TRUE(evaluate("kernel_time[gemm]>+3%", d).failed);
  const GateResult r = evaluate("kernel_time>+3%", d);
  EXPECT_DOUBLE_EQ(r.change, 4.0);
  EXPECT_EQ(r.message, "kernel_time>+3%: 100.000 ms -> 104.000 ms (+4.00%, noise 1.000 ms): failed") << r.message;
  EXPECT_TRUE(evaluate("kernel_time<-3%", kernel_diff(100'000'000, 96'000'000)).failed);
  // Within noise is said, not hidden: the gate still judges the measured change.
  const GateResult small = evaluate("kernel_time>+1%", kernel_diff(100'000'000, 101'500'000));
  EXPECT_TRUE(small.failed);
  EXPECT_NE(small.message.find("within noise"), std::string::npos) << small.message;
  // From zero, any growth is +inf%.
  EXPECT_TRUE(evaluate("kernel_time>+1000%", kernel_diff(0, 1)).failed);
}

TEST(DiffGateTest, AMetricOfTheOtherKindOrAMissingNameIsAnError) {
  const TraceDiff d = kernel_diff(1, 2);
  auto wrong = evaluate_gate(parse("peak_reserved>+5%"), d);
  ASSERT_TRUE(std::holds_alternative<std::string>(wrong));
  EXPECT_NE(std::get<std::string>(wrong).find("peak_reserved applies to allocator snapshots, and these files are traces"),
            std::string::npos)
      << std::get<std::string>(wrong);
  auto missing = evaluate_gate(parse("kernel_time[nope]>+5%"), d);
  ASSERT_TRUE(std::holds_alternative<std::string>(missing));
  EXPECT_NE(std::get<std::string>(missing).find("'nope' is not a kernel name in either trace"), std::string::npos);
  auto trace_gate = evaluate_gate(parse("kernel_time>+5%"), SnapshotDiff{});
  EXPECT_TRUE(std::holds_alternative<std::string>(trace_gate));
}

TEST(DiffGateTest, SnapshotGatesPassOnASnapshotAgainstItselfAndFailOnRealGrowth) {
  const Snapshot small = testing::load_fixture("snap_small_p5.pickle");
  const Snapshot full = testing::load_fixture("snap_transformer_p4.pickle.gz");
  const SnapshotDiff same = diff_snapshots(full, full), grew = diff_snapshots(small, full);
  for (const char* text : {"peak_reserved>+0", "peak_allocated>+0%", "fragmentation>+0", "reserved>0", "allocated>+0B",
                           "nvtx_bytes[Optimizer.step#AdamW.step]>+0"}) {
    auto r = evaluate_gate(parse(text), same);
    ASSERT_TRUE(std::holds_alternative<GateResult>(r)) << text;
    EXPECT_FALSE(std::get<GateResult>(r).failed) << std::get<GateResult>(r).message;
  }
  auto r = evaluate_gate(parse("peak_reserved>+5%"), grew);
  ASSERT_TRUE(std::holds_alternative<GateResult>(r));
  const GateResult& g = std::get<GateResult>(r);
  EXPECT_TRUE(g.failed) << g.message;
  EXPECT_EQ(g.a, double(grew.a.peak_reserved_bytes));
  EXPECT_EQ(g.b, double(grew.b.peak_reserved_bytes));
  const std::string top = grew.by_user_frame.rows.front().frame;
  auto frame = evaluate_gate(parse("frame_bytes[" + top + "]>+0"), grew);
  ASSERT_TRUE(std::holds_alternative<GateResult>(frame));
  EXPECT_TRUE(std::get<GateResult>(frame).failed);
}

}  // namespace
}  // namespace cudascope::analysis
