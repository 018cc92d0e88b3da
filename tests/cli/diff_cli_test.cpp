// `cudascope diff` end to end on real fixtures, checked against what Python's json and pickle
// compute from the same files (tests/data/diff_expect.py), and its gates as a CI job uses
// them: exit 0 on A against A, 1 on real growth, 2 on a usage or input error.
//
// The pairs: two torch.profiler runs of one training loop (kineto_train_h100_s2, 2 steps,
// and _s3, 3 steps: more kernels in B); one program traced by cudascope and by torch.profiler
// (train_h100_ours, train_h100_kineto); a cut of a PyTorch snapshot (snap_small_p5: its first
// segments and entries, made by tests/gui/make_snapshot_fixtures.py) and the whole snapshot.
#include "run_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace cudascope::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string data(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }

const std::string kSmall = data("snap_small_p5.pickle");
const std::string kSnapshot = data("snap_transformer_p4.pickle.gz");
const std::string kTwoSteps = data("kineto_train_h100_s2.json.gz");
const std::string kThreeSteps = data("kineto_train_h100_s3.json.gz");
const std::string kOurs = data("train_h100_ours.json.gz");

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "diff_cli_" + std::to_string(::getpid()) + "_" + name;
}

nlohmann::json diff_json(const std::string& a, const std::string& b) {
  const CliResult r = run_cli("", "diff -q --json --top 0 '" + a + "' '" + b + "' 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

nlohmann::json python_expectation(const std::string& a, const std::string& b) {
  const CliResult r = run_shell("python3 '" + data("diff_expect.py") + "' '" + a + "' '" + b + "' 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << "python3 is needed to run the tests: " << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

void expect_rows_match(const nlohmann::json& rows, const nlohmann::json& expected, const std::string& table) {
  ASSERT_TRUE(rows.is_array()) << table;
  EXPECT_EQ(rows.size(), expected.size()) << table;
  for (const auto& row : rows) {
    const std::string name = row["name"];
    ASSERT_TRUE(expected.contains(name)) << table << ": " << name;
    const auto& want = expected[name];
    EXPECT_EQ(row["count_a"], want["count_a"]) << table << ": " << name;
    EXPECT_EQ(row["count_b"], want["count_b"]) << table << ": " << name;
    EXPECT_EQ(row["a_ns"], want["a_ns"]) << table << ": " << name;
    EXPECT_EQ(row["b_ns"], want["b_ns"]) << table << ": " << name;
    if (want.contains("bytes_a")) {
      EXPECT_EQ(row["bytes_a"], want["bytes_a"]) << name;
      EXPECT_EQ(row["bytes_b"], want["bytes_b"]) << name;
    }
    if (want["noise_ns"].is_null()) {
      EXPECT_TRUE(row["noise_ns"].is_null()) << table << ": " << name;
      EXPECT_FALSE(row["within_noise"].get<bool>()) << table << ": " << name;
    } else {
      const double noise = want["noise_ns"];
      ASSERT_TRUE(row["noise_ns"].is_number()) << table << ": " << name;
      EXPECT_NEAR(row["noise_ns"].get<double>(), noise, 1e-6 * noise + 1e-6) << table << ": " << name;
      const double change = std::fabs(double(want["b_ns"].get<int64_t>() - want["a_ns"].get<int64_t>()));
      if (std::fabs(change - 2 * noise) > 1e-6 * noise) {  // away from the edge, where rounding decides
        EXPECT_EQ(row["within_noise"].get<bool>(), change <= 2 * noise) << table << ": " << name;
      }
    }
  }
}

void expect_trace_diff_matches_python(const std::string& a, const std::string& b) {
  const nlohmann::json got = diff_json(a, b), want = python_expectation(a, b);
  ASSERT_FALSE(got.is_discarded());
  ASSERT_FALSE(want.is_discarded());
  EXPECT_EQ(got["kind"], "trace");
  expect_rows_match(got["kernels"]["rows"], want["kernels"], "kernels");
  expect_rows_match(got["nvtx_ranges"]["rows"], want["nvtx_ranges"], "nvtx_ranges");
  expect_rows_match(got["copies"]["rows"], want["copies"], "copies");
  int64_t total_a = 0, total_b = 0;
  for (const auto& [name, row] : want["kernels"].items()) total_a += row["a_ns"].get<int64_t>(), total_b += row["b_ns"].get<int64_t>();
  EXPECT_EQ(got["kernels"]["total"]["a_ns"], total_a);
  EXPECT_EQ(got["kernels"]["total"]["b_ns"], total_b);
}

TEST(DiffCliTest, TwoTorchProfilerRunsMatchPythonsFigures) { expect_trace_diff_matches_python(kTwoSteps, kThreeSteps); }

TEST(DiffCliTest, OurTraceAgainstTorchProfilersOfOneProgramMatchesPythonsFigures) {
  expect_trace_diff_matches_python(data("train_h100_ours.json.gz"), data("train_h100_kineto.json.gz"));
}

TEST(DiffCliTest, SnapshotsMatchPythonsPeaksFragmentationAndNvtxGroups) {
  const nlohmann::json got = diff_json(kSmall, kSnapshot), want = python_expectation(kSmall, kSnapshot);
  ASSERT_FALSE(got.is_discarded());
  ASSERT_FALSE(want.is_discarded());
  EXPECT_EQ(got["kind"], "snapshot");
  for (const char* side : {"a", "b"}) {
    const auto& w = want[side];
    for (const char* key : {"peak_reserved_bytes", "peak_allocated_bytes", "reserved_bytes", "allocated_bytes"})
      EXPECT_EQ(got["figures"][key][side].get<double>(), w[key].get<double>()) << side << " " << key;
    EXPECT_NEAR(got["figures"]["fragmentation_percent"][side].get<double>(), w["fragmentation_percent"].get<double>(), 1e-9);
    const std::string total = std::string("total_") + side, bytes = std::string("bytes_") + side;
    EXPECT_EQ(got["by_user_frame"][total], w["live_bytes"]);
    EXPECT_EQ(got["by_nvtx_range"][total], w["live_bytes"]);
    std::map<std::string, uint64_t> groups;
    for (const auto& row : got["by_nvtx_range"]["rows"])
      if (row[bytes].get<uint64_t>() > 0) groups[row["group"]] = row[bytes];
    EXPECT_EQ(nlohmann::json(groups), w["by_nvtx_range"]) << side;
  }
  // The growth is real, and the user frames name the training script.
  EXPECT_GT(want["b"]["peak_reserved_bytes"].get<uint64_t>(), want["a"]["peak_reserved_bytes"].get<uint64_t>());
  EXPECT_THAT(got["by_user_frame"]["rows"][0]["group"].get<std::string>(), HasSubstr("train_transformer.py"));
}

// What a CI job does: the same gates pass on a file against itself and fail on real growth.
TEST(DiffCliTest, GatesPassOnAFileAgainstItselfAndFailWithExitOneOnRealGrowth) {
  const std::string trace_gates = "--fail-if 'kernel_time>+3%' --fail-if 'copy_bytes>+0' --fail-if 'nvtx_time[Optimizer.step#AdamW.step]>+10%'";
  CliResult same = run_cli("", "diff -q " + kTwoSteps + " " + kTwoSteps + " " + trace_gates);
  EXPECT_EQ(same.exit_code, 0) << same.output;
  EXPECT_THAT(same.output, HasSubstr("kernel_time>+3%: "));
  EXPECT_THAT(same.output, HasSubstr("(+0.00%"));
  EXPECT_THAT(same.output, Not(HasSubstr("failed")));

  CliResult grew = run_cli("", "diff -q " + kTwoSteps + " " + kThreeSteps + " " + trace_gates);
  EXPECT_EQ(grew.exit_code, 1) << grew.output;
  EXPECT_THAT(grew.output, HasSubstr("cudascope diff: gate failed: kernel_time>+3%: "));
  EXPECT_THAT(grew.output, HasSubstr("cudascope diff: gate failed: copy_bytes>+0: 384.03 KiB -> 576.05 KiB"));

  // A loose enough gate passes on the same growth.
  EXPECT_EQ(run_cli("", "diff -q " + kTwoSteps + " " + kThreeSteps + " --fail-if 'kernel_time>+100%'").exit_code, 0);

  const std::string snapshot_gates = "--fail-if 'peak_reserved>+5%' --fail-if 'peak_allocated>+100MiB' --fail-if 'fragmentation>+2%'";
  EXPECT_EQ(run_cli("", "diff -q " + kSnapshot + " " + data("snap_transformer_p2.pickle.gz") + " " + snapshot_gates).exit_code, 0);
  CliResult snap = run_cli("", "diff -q --json " + kSmall + " " + kSnapshot + " " + snapshot_gates + " 2>/dev/null");
  EXPECT_EQ(snap.exit_code, 1) << snap.output;
  const auto json = nlohmann::json::parse(snap.output, nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << snap.output;
  EXPECT_EQ(json["exit_code"], 1);
  ASSERT_EQ(json["gates"].size(), 3u);
  EXPECT_TRUE(json["gates"][0]["failed"].get<bool>());
  EXPECT_EQ(json["gates"][0]["a"], json["figures"]["peak_reserved_bytes"]["a"]);
  EXPECT_EQ(json["gates"][0]["b"], json["figures"]["peak_reserved_bytes"]["b"]);
}

TEST(DiffCliTest, UsageAndInputErrorsExitTwoNamingWhatIsWrong) {
  // A bad expression is reported before any file is opened (these do not exist).
  CliResult bad = run_cli("", "diff /nonexistent/a.json /nonexistent/b.json --fail-if 'peak_reserved>+5parsecs'");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_THAT(bad.output, HasSubstr("'peak_reserved>+5parsecs'"));
  EXPECT_THAT(bad.output, Not(HasSubstr("nonexistent")));

  CliResult mixed = run_cli("", "diff " + kSnapshot + " " + kTwoSteps);
  EXPECT_EQ(mixed.exit_code, 2) << mixed.output;
  EXPECT_THAT(mixed.output, HasSubstr(kSnapshot + " is an allocator snapshot and " + kTwoSteps + " is a trace"));

  CliResult wrong_kind = run_cli("", "diff " + kTwoSteps + " " + kThreeSteps + " --fail-if 'peak_reserved>+5%'");
  EXPECT_EQ(wrong_kind.exit_code, 2) << wrong_kind.output;
  EXPECT_THAT(wrong_kind.output, HasSubstr("peak_reserved applies to allocator snapshots"));

  CliResult unknown = run_cli("", "diff -q " + kTwoSteps + " " + kThreeSteps + " --fail-if 'kernel_time[no_such_kernel]>+3%'");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_THAT(unknown.output, HasSubstr("'no_such_kernel' is not a kernel name in either trace"));

  CliResult missing = run_cli("", "diff " + kTwoSteps + " /nonexistent/b.json");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_THAT(missing.output, HasSubstr("/nonexistent/b.json"));

  CliResult not_a_file = run_cli("", "diff " + kTwoSteps + " " + data("snap_bad_not_snapshot.txt"));
  EXPECT_EQ(not_a_file.exit_code, 2) << not_a_file.output;
  EXPECT_THAT(not_a_file.output, HasSubstr("snap_bad_not_snapshot.txt"));

  EXPECT_EQ(run_cli("", "diff " + kTwoSteps).exit_code, 2);  // B missing: CLI11's usage error
}

// A gate on a file that holds part of a recording compares what was lost, not what changed:
// B cut short (a killed writer, a copy stopped half way) or empty shows "-100%" and would
// pass any growth gate. With gates that is an input error naming the file; without, a note.
TEST(DiffCliTest, GatesRefuseACutShortTraceWithExitTwoNamingTheFileAndWhereItEnds) {
  const std::string whole = bytes_of(kOurs);
  ASSERT_GT(whole.size(), 1000u);
  const std::string cut = temp_path("cut.json.gz");
  put_bytes(cut, whole.substr(0, whole.size() / 2));
  const std::string gate = " --fail-if 'kernel_time>+3%'";

  CliResult b_cut = run_cli("", "diff -q " + kOurs + " " + cut + gate);
  EXPECT_EQ(b_cut.exit_code, 2) << b_cut.output;
  EXPECT_THAT(b_cut.output, HasSubstr("cannot gate on B (" + cut + "): the file ends at byte "));
  EXPECT_THAT(b_cut.output, ::testing::ContainsRegex("ends at byte [0-9]+ before the trace does"));
  CliResult a_cut = run_cli("", "diff -q --json " + cut + " " + kOurs + gate);
  EXPECT_EQ(a_cut.exit_code, 2) << a_cut.output;
  EXPECT_THAT(a_cut.output, HasSubstr("cannot gate on A (" + cut + "): the file ends at byte "));

  // Without gates the tables are shown as ever, the cut noted, and nothing failed.
  CliResult no_gate = run_cli("", "diff -q " + kOurs + " " + cut);
  EXPECT_EQ(no_gate.exit_code, 0) << no_gate.output;
  EXPECT_THAT(no_gate.output, HasSubstr("note: B: the file ends at byte "));
  std::remove(cut.c_str());
}

TEST(DiffCliTest, GatesRefuseATraceWhoseRecordingDidNotFinish) {
  nlohmann::json doc = nlohmann::json::parse(run_shell("gzip -dc " + kOurs).output, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("cudascopeSummary"));
  doc.erase("cudascopeSummary");  // what a writer that never reached its end leaves
  const std::string unfinished = temp_path("unfinished.json");
  put_bytes(unfinished, doc.dump());
  CliResult r = run_cli("", "diff -q " + kOurs + " " + unfinished + " --fail-if 'kernel_time>+3%'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot gate on B (" + unfinished + "): its recording did not finish"));
  std::remove(unfinished.c_str());
}

TEST(DiffCliTest, GatesRefuseAFileHoldingNoneOfWhatTheyMeasure) {
  const std::string empty_trace = temp_path("empty.json");
  put_bytes(empty_trace, R"({"traceEvents":[]})");
  CliResult kernels = run_cli("", "diff -q " + kOurs + " " + empty_trace + " --fail-if 'kernel_time>+3%'");
  EXPECT_EQ(kernels.exit_code, 2) << kernels.output;
  EXPECT_THAT(kernels.output, HasSubstr("cannot gate 'kernel_time>+3%' on B (" + empty_trace + "): it holds no kernels"));
  CliResult copies = run_cli("", "diff -q " + empty_trace + " " + kTwoSteps + " --fail-if 'copy_bytes<-10%'");
  EXPECT_EQ(copies.exit_code, 2) << copies.output;
  EXPECT_THAT(copies.output, HasSubstr("on A (" + empty_trace + "): it holds no kernels, copies or NVTX ranges"));
  // Two recordings of a workload that makes no copy: a copy gate compares them (no change).
  const std::string no_copies = temp_path("no_copies.json");
  std::ofstream(no_copies) << R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":5,"pid":0,"tid":7}]})";
  const CliResult copy_gate = run_cli("", "diff -q " + no_copies + " " + no_copies + " --fail-if 'copy_bytes>+0'");
  EXPECT_EQ(copy_gate.exit_code, 0) << copy_gate.output;
  EXPECT_EQ(run_cli("", "diff -q " + kOurs + " " + empty_trace).exit_code, 0);

  // A snapshot holding nothing (taken before the first allocation, or after everything was
  // freed and the cache emptied) is a real measurement: gated as any other.
  const std::string empty_snapshot = temp_path("empty_snapshot.json");
  put_bytes(empty_snapshot, R"({"segments":[],"device_traces":[]})");
  const std::string gate = " --fail-if 'peak_reserved>+5%'";
  const CliResult emptied = run_cli("", "diff -q " + kSnapshot + " " + empty_snapshot + gate);
  EXPECT_EQ(emptied.exit_code, 0) << emptied.output;
  const CliResult grown = run_cli("", "diff -q " + empty_snapshot + " " + kSnapshot + gate);
  EXPECT_EQ(grown.exit_code, 1) << grown.output;
  std::remove(empty_trace.c_str());
  std::remove(empty_snapshot.c_str());
}

TEST(DiffCliTest, TextTablesHonourTopAndHelpDocumentsGatesAndExitCodes) {
  CliResult text = run_cli("", "diff -q --top 2 " + kTwoSteps + " " + kThreeSteps);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("Kernel time by name (top 2 of "));
  EXPECT_THAT(text.output, HasSubstr("Copies and memsets by kind"));
  EXPECT_THAT(text.output, HasSubstr("all kernels"));
  CliResult help = run_cli("", "diff --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* part : {"--fail-if", "Exit codes: 0", "1 a gate failed", "2 a usage or input error", "standard error",
                           "peak_reserved", "kernel_time[KERNEL]", "--json", "--top"})
    EXPECT_THAT(help.output, HasSubstr(part));
}

}  // namespace
}  // namespace cudascope::testing
