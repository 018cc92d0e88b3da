// What the commands refuse rather than answer wrongly (issue 25): sizes the allocator cannot
// round, a sim device that cannot reserve its address space, output that cannot be written,
// an output that is one of the inputs, and flag values that are not what the flag takes.
#include "run_cli.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cudascope::testing::CliResult;
using cudascope::testing::run_cli;
using cudascope::testing::run_shell;

std::string data(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "cli_refusals_" + std::to_string(getpid()) + "_" + name;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::filesystem::remove(path);
  std::ofstream(path) << text;
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A link to /dev/full: every write to it fails with ENOSPC.
std::string link_to_dev_full(const std::string& name) {
  const std::string path = temp_path(name);
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/dev/full", path);
  return path;
}

const char* const kSequence =
    "{\"conf\": \"\"}\n"
    "{\"op\": \"alloc\", \"id\": 1, \"size\": 4096}\n"
    "{\"op\": \"free\", \"id\": 1}\n";

// --- sizes the allocator cannot round ---------------------------------------------------

TEST(ReplayRefusesTest, NegativeSizeIsAnErrorNamingTheLine) {
  const std::string seq = write_file("negative.jsonl", "{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 1, \"size\": -1}\n");
  const CliResult r = run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(":2: \"size\" is negative: -1"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("requested_bytes"), std::string::npos) << r.output;
}

TEST(ReplayRefusesTest, SizePastTheSequenceIntegersIsRefusedNotClamped) {
  // strtoll would clamp these to 2^63 - 1 and replay that; the allocator's own refusal of
  // sizes it cannot round is tested in tests/runtime (allocator_test).
  for (const std::string size : {"18446744073709551615", "9223372036854775808"}) {
    const std::string seq =
        write_file("huge.jsonl", "{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 1, \"size\": " + size + "}\n");
    const CliResult r = run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "'");
    EXPECT_EQ(r.exit_code, 1) << size << ": " << r.output;
    EXPECT_NE(r.output.find("out of range"), std::string::npos) << r.output;
  }
}

// --- the sim device's address space ---------------------------------------------------------

TEST(SimReservationTest, ReplayUnderAnAddressSpaceLimitFailsNamingTheSetting) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers need more address space than the limit leaves";
#endif
  const std::string seq = write_file("small.jsonl", kSequence);
  const CliResult r = run_shell("ulimit -v 4194304; CUDASCOPE_BACKEND=sim " + std::string(CUDASCOPE_CLI_PATH) +
                                " replay '" + seq + "'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDASCOPE_SIM_MEMORY"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\"allocated_bytes.all.current\": 0"), std::string::npos) << r.output;
  // Lowering the setting, as the message says, makes it run.
  const CliResult lowered = run_shell("ulimit -v 4194304; CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=256MiB " +
                                      std::string(CUDASCOPE_CLI_PATH) + " replay '" + seq + "'");
  EXPECT_EQ(lowered.exit_code, 0) << lowered.output;
  EXPECT_NE(lowered.output.find("\"allocation.all.allocated\": 1"), std::string::npos) << lowered.output;
}

TEST(SimReservationTest, WhatifUnderAnAddressSpaceLimitFailsRatherThanPredictingOom) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers need more address space than the limit leaves";
#endif
  const CliResult r = run_shell("ulimit -v 4194304; " + std::string(CUDASCOPE_CLI_PATH) + " whatif '" +
                                data("snap_transformer_p4.pickle.gz") + "'");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CUDASCOPE_SIM_MEMORY"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("yes, entry"), std::string::npos) << r.output;
}

// --- write errors ---------------------------------------------------------------------------

TEST(WriteErrorTest, StdoutOnDevFullIsANonZeroExit) {
  const std::string snapshot = "'" + data("snap_transformer_p4.pickle.gz") + "'";
  const std::string seq = write_file("stdout.jsonl", kSequence);
  for (const std::string& args : {"snapshot-stats " + snapshot, "snapshot-stats --json " + snapshot,
                                  "stats '" + data("chrome_plain.json") + "'", "replay '" + seq + "'", std::string("--help"),
                                  std::string("--version")}) {
    const CliResult r = run_cli("CUDASCOPE_BACKEND=sim", args + " > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    // The reason is known when the last flush fails; a write that failed earlier left none.
    EXPECT_NE(r.output.find("cannot write standard output: "), std::string::npos) << args << ": " << r.output;
  }
}

TEST(WriteErrorTest, OutputFileThatIsNotARegularFileIsRefusedBeforeWork) {
  const std::string full = link_to_dev_full("full.json");
  const std::string seq = write_file("devfull.jsonl", kSequence);
  const CliResult replay = run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "' --stats-json '" + full + "'");
  EXPECT_EQ(replay.exit_code, 2) << replay.output;
  EXPECT_NE(replay.output.find("not a regular file"), std::string::npos) << replay.output;
  const CliResult run = run_cli("CUDASCOPE_BACKEND=sim", "run -o '" + full + "' -- true");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("not a regular file"), std::string::npos) << run.output;
  const CliResult trace = run_cli("", "trace --pid " + std::to_string(getpid()) + " -o '" + full + "'");
  EXPECT_EQ(trace.exit_code, 2) << trace.output;
  EXPECT_NE(trace.output.find("not a regular file"), std::string::npos) << trace.output;
  EXPECT_EQ(trace.output.find("written"), std::string::npos) << trace.output;
}

// A trace its process opened but could not write a byte of: the program ran, so this is found
// only at the end, and it must not pass for a recorded run. A pattern's expansion is not
// probed before the program starts (it may differ per process), so a name it expands to can
// be a link to /dev/full; the injection library follows it (as any output, claim_trace_path).
TEST(WriteErrorTest, RunWhoseTraceCouldNotBeWrittenIsANonZeroExit) {
  const std::string dir = temp_path("unwritable_trace");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink("/dev/full", dir + "/t_0.json");
  const std::string cli = CUDASCOPE_CLI_PATH;
  const std::string run = "CUDASCOPE_BACKEND=sim RANK=0 " + cli + " run -o '" + dir + "/t_%r.json' -- ";
  const CliResult succeeded = run_shell(run + cli + " demo --iterations 2");
  EXPECT_EQ(succeeded.exit_code, 1) << succeeded.output;
  EXPECT_NE(succeeded.output.find("cannot write '" + dir + "/t_0.json'"), std::string::npos) << succeeded.output;
  EXPECT_NE(succeeded.output.find("the program exited with status 0; recording failed"), std::string::npos) << succeeded.output;
  EXPECT_EQ(succeeded.output.find("events, "), std::string::npos) << "listed as a trace: " << succeeded.output;
  // A program that failed keeps its own status.
  const CliResult failed = run_shell(run + "sh -c '" + cli + " demo --iterations 2 >/dev/null; exit 3'");
  EXPECT_EQ(failed.exit_code, 3) << failed.output;
  EXPECT_NE(failed.output.find("cannot write '" + dir + "/t_0.json'"), std::string::npos) << failed.output;
  std::filesystem::remove_all(dir);
}

// --- a device given twice ---------------------------------------------------------------------

// The lines of an exposition without their values: comments and series, in order.
std::vector<std::string> series_of(const std::string& exposition) {
  std::vector<std::string> series;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    series.push_back(line.rfind('#', 0) == 0 ? line : line.substr(0, line.rfind(' ')));
  }
  return series;
}

// Each series once: an exposition with a series twice is rejected whole by Prometheus.
TEST(RepeatedDeviceTest, MetricsReportsARepeatedDeviceOnceAndSaysSo) {
  const CliResult once = run_cli("CUDASCOPE_BACKEND=sim", "metrics --device 0 2>/dev/null");
  const CliResult repeated = run_cli("CUDASCOPE_BACKEND=sim", "metrics --device 0 --device 0 --device 0");
  ASSERT_EQ(once.exit_code, 0) << once.output;
  EXPECT_EQ(repeated.exit_code, 0) << repeated.output;
  const std::string note = "cudascope: --device 0 given more than once; reporting each device once\n";
  const std::size_t at = repeated.output.find(note);
  ASSERT_NE(at, std::string::npos) << repeated.output;
  EXPECT_EQ(repeated.output.find(note, at + 1), std::string::npos) << "one note: " << repeated.output;
  EXPECT_EQ(series_of(std::string(repeated.output).erase(at, note.size())), series_of(once.output));
}

TEST(RepeatedDeviceTest, ServeCountsARepeatedDeviceOnce) {
  const CliResult r =
      run_cli("CUDASCOPE_BACKEND=sim timeout -s TERM 2", "serve --bind 127.0.0.1:0 --device 0 --device 0");
  EXPECT_NE(r.output.find("--device 0 given more than once"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("serving metrics of 1 device(s)"), std::string::npos) << r.output;
}

// --- an output that is one of the inputs ------------------------------------------------------

TEST(OutputOverInputTest, StatsSummaryOutOverItsTraceIsRefusedAndTheTraceKept) {
  const std::string trace = temp_path("trace.json");
  std::filesystem::copy_file(data("chrome_plain.json"), trace, std::filesystem::copy_options::overwrite_existing);
  const std::string before = read_file(trace);
  const std::string link = temp_path("trace_link.json");
  std::filesystem::remove(link);
  std::filesystem::create_symlink(trace, link);
  for (const std::string& out : {trace, link}) {
    const CliResult r = run_cli("", "stats --summary-out '" + out + "' '" + trace + "'");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--summary-out"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("is the input"), std::string::npos) << r.output;
    EXPECT_EQ(read_file(trace), before);
  }
}

TEST(OutputOverInputTest, ReplayStatsJsonOverItsSequenceIsRefusedAndTheSequenceKept) {
  const std::string seq = write_file("self.jsonl", kSequence);
  const std::string hard = temp_path("self_hard.jsonl");
  std::filesystem::remove(hard);
  std::filesystem::create_hard_link(seq, hard);
  for (const std::string& out : {seq, hard}) {
    const CliResult r = run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "' --stats-json '" + out + "'");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--stats-json"), std::string::npos) << r.output;
    EXPECT_EQ(read_file(seq), kSequence);
  }
  // And a separate file is still written.
  const std::string out = temp_path("stats_out.json");
  std::filesystem::remove(out);
  const CliResult ok = run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "' --stats-json '" + out + "'");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(read_file(out).find("\"allocation.all.allocated\": 1"), std::string::npos);
}

// --- flag values ------------------------------------------------------------------------------

struct BadFlag {
  std::string arguments;
  std::string flag;
  std::string value;
};

class BadFlagTest : public ::testing::TestWithParam<BadFlag> {};

TEST_P(BadFlagTest, IsAUsageErrorNamingTheFlagAndTheValue) {
  const BadFlag& bad = GetParam();
  const std::string snapshot = data("snap_transformer_p4.pickle.gz");
  std::string args = bad.arguments;
  for (std::size_t at; (at = args.find("SNAPSHOT")) != std::string::npos;) args.replace(at, 8, "'" + snapshot + "'");
  const CliResult r = run_cli("CUDASCOPE_BACKEND=sim", args);
  EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
  EXPECT_NE(r.output.find(bad.flag), std::string::npos) << args << ": " << r.output;
  EXPECT_NE(r.output.find("'" + bad.value + "'"), std::string::npos) << args << ": " << r.output;
  EXPECT_EQ(r.output.find("stoull"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Issue25, BadFlagTest,
    ::testing::Values(BadFlag{"run --metrics 127.0.0.1:99999 -- true", "--metrics", "127.0.0.1:99999"},
                      BadFlag{"run --metrics :65536 -- true", "--metrics", ":65536"},
                      BadFlag{"run --metrics 127.0.0.1: -- true", "--metrics", "127.0.0.1:"},
                      BadFlag{"diff --top -1 SNAPSHOT SNAPSHOT", "--top", "-1"},
                      BadFlag{"diff --top 18446744073709551616 SNAPSHOT SNAPSHOT", "--top", "18446744073709551616"},
                      BadFlag{"whatif --memory-limit '' SNAPSHOT", "--memory-limit", ""},
                      BadFlag{"metrics --device ''", "--device", ""}));

TEST(RecordedAddressesTest, PastTwoTo64IsAUsageErrorBeforeTheReplay) {
  const std::string seq = write_file("addresses.jsonl", kSequence);
  const std::string addresses = write_file("addresses.json", "[140000000000, 18446744073709551616]");
  const CliResult r =
      run_cli("CUDASCOPE_BACKEND=sim", "replay '" + seq + "' --recorded-addresses '" + addresses + "'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--recorded-addresses"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("18446744073709551616"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("stoull"), std::string::npos) << r.output;
}

}  // namespace
