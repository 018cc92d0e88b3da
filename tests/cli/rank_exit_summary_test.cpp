// A rank's summary written by the injection library beside its trace when the process ends
// (inject/exit_summary.h), on the sim backend: at normal exit and on SIGTERM it is the summary
// `cudascope stats --summary-out` computes from the same trace, and the summaries merge into
// the tables the traces give; a process without RANK writes none; a summary that cannot be
// written is one stderr line and leaves the trace whole; a rank killed with SIGKILL leaves its
// trace only, which `stats` still summarises.
#include "fresh_directory_test.h"
#include "run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

using cudascope::testing::run_cli;

const std::string kSim = "CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_DEVICES=2";

std::string rank_env(int rank) {
  return "RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) + " WORLD_SIZE=2";
}

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json(const std::string& file) {
  const std::string text = read_text(file);
  return nlohmann::json::parse(text, nullptr, false);
}

class RankExitSummaryTest : public cudascope::testing::FreshDirectoryTest {
 protected:
  RankExitSummaryTest() : FreshDirectoryTest("cudascope_exit_summary_") {}

  // What `cudascope stats --summary-out` makes of the trace: the figures to equal.
  nlohmann::json summary_by_stats(const std::string& trace) const {
    const std::string out = path("by_stats.json");
    const auto result = run_cli("", "stats --summary-out " + out + " " + trace);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return read_json(out);
  }

  // `cudascope run ARGUMENTS` in the background, its output in run.log.
  pid_t start_run(const std::string& environment, const std::string& arguments) const {
    const std::string command =
        "exec env " + kSim + " " + environment + " " + CUDASCOPE_CLI_PATH + " run " + arguments + " >" + path("run.log") + " 2>&1";
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }

  static int wait_status(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Waits until `trace` (plain JSON) holds the worker's last step on disk: its four steps are
  // over and flushed. False after 30 s.
  bool wait_for_steps_on_disk(const std::string& trace) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (read_text(trace).find("ProfilerStep#3") != std::string::npos) return true;
    }
    return false;
  }
};

TEST_F(RankExitSummaryTest, EachRankWritesTheSummaryStatsWouldComputeBesideItsTrace) {
  const std::string worker = RANK_WORKER_PATH;
  const std::string ranks = "sh -c '" + rank_env(0) + " " + worker + " & " + rank_env(1) + " " + worker + " & wait'";
  const auto result = run_cli(kSim, "run -o " + path("t_%r.json.gz") + " -- " + ranks);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(files(), (std::set<std::string>{"t_0.json.gz", "t_1.json.gz", "summary_t_0.json", "summary_t_1.json"}));
  // `run` lists each summary with the traces.
  EXPECT_NE(result.output.find("cudascope: rank summary " + path("summary_t_1.json")), std::string::npos) << result.output;
  for (int rank : {0, 1}) {
    const std::string r = std::to_string(rank);
    SCOPED_TRACE("rank " + r);
    const nlohmann::json at_exit = read_json(path("summary_t_" + r + ".json"));
    ASSERT_FALSE(at_exit.is_discarded());
    EXPECT_EQ(at_exit["rank"], rank);
    EXPECT_EQ(at_exit["steps"].size(), 4u);
    EXPECT_EQ(at_exit, summary_by_stats(path("t_" + r + ".json.gz")));
  }
  // The merged tables from the summaries alone are the tables of the traces.
  const auto from_traces = run_cli("", "stats --json " + path("t_0.json.gz") + " " + path("t_1.json.gz"));
  const auto from_summaries = run_cli("", "stats --json " + path("summary_t_0.json") + " " + path("summary_t_1.json"));
  ASSERT_EQ(from_traces.exit_code, 0) << from_traces.output;
  ASSERT_EQ(from_summaries.exit_code, 0) << from_summaries.output;
  EXPECT_EQ(nlohmann::json::parse(from_summaries.output), nlohmann::json::parse(from_traces.output));
}

TEST_F(RankExitSummaryTest, AProcessWithoutRankWritesNoSummary) {
  const auto result = run_cli("env -u RANK -u LOCAL_RANK -u WORLD_SIZE " + kSim, "run -o " + path("t.json") + " -- " + RANK_WORKER_PATH);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(files(), std::set<std::string>{"t.json"});
}

TEST_F(RankExitSummaryTest, SigtermedRankStillWritesItsSummary) {
  const pid_t run = start_run(rank_env(0) + " RANK_WORKER_HOLD_MS=60000", "-o " + path("t_%r.json") + " -- " + RANK_WORKER_PATH);
  ASSERT_TRUE(wait_for_steps_on_disk(path("t_0.json"))) << read_text(path("run.log"));
  kill(run, SIGTERM);  // run forwards it to the program
  wait_status(run);
  EXPECT_EQ(files(), (std::set<std::string>{"run.log", "t_0.json", "summary_t_0.json"})) << read_text(path("run.log"));
  const nlohmann::json at_exit = read_json(path("summary_t_0.json"));
  ASSERT_FALSE(at_exit.is_discarded()) << read_text(path("run.log"));
  EXPECT_EQ(at_exit["steps"].size(), 4u);
  EXPECT_EQ(at_exit, summary_by_stats(path("t_0.json")));
}

TEST_F(RankExitSummaryTest, ASummaryThatCannotBeWrittenIsOneLineAndTheTraceStaysWhole) {
  // A directory where the summary would go: it cannot be written there.
  std::filesystem::create_directory(path("summary_t_0.json"));
  const auto result = run_cli(kSim + " " + rank_env(0), "run -o " + path("t_%r.json") + " -- " + RANK_WORKER_PATH);
  EXPECT_EQ(result.exit_code, 0) << "a summary's failure is not the program's: " << result.output;
  EXPECT_EQ(files(), (std::set<std::string>{"t_0.json", "summary_t_0.json"})) << "no .partial left: " << result.output;
  EXPECT_TRUE(std::filesystem::is_directory(path("summary_t_0.json")));
  const std::string line = "cudascope: rank summary '" + path("summary_t_0.json") + "' not written: ";
  const std::size_t at = result.output.find(line);
  ASSERT_NE(at, std::string::npos) << result.output;
  EXPECT_NE(result.output.find("the trace '" + path("t_0.json") + "' is complete", at), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find(line, at + 1), std::string::npos) << "said once: " << result.output;
  EXPECT_EQ(result.output.find("cudascope: rank summary " + path("summary_t_0.json")), std::string::npos)
      << "run lists no summary that was not written: " << result.output;
  // The trace is whole: stats reads it to the end, all four steps.
  const nlohmann::json later = summary_by_stats(path("t_0.json"));
  EXPECT_EQ(later["steps"].size(), 4u);
}

TEST_F(RankExitSummaryTest, SigkilledRankLeavesItsTraceWhichStatsSummarises) {
  // The launcher writes the rank's pid, so the test kills the rank itself, not `run`.
  const std::string pid_file = path("rank.pid");
  const std::string ranks = "sh -c \"" + rank_env(0) + " RANK_WORKER_HOLD_MS=60000 " + RANK_WORKER_PATH + " & echo \\$! >" +
                            pid_file + "; wait\"";
  const pid_t run = start_run("", "-o " + path("t_%r.json") + " -- " + ranks);
  ASSERT_TRUE(wait_for_steps_on_disk(path("t_0.json"))) << read_text(path("run.log"));
  const pid_t rank = static_cast<pid_t>(std::stol(read_text(pid_file)));
  ASSERT_EQ(kill(rank, SIGKILL), 0);
  wait_status(run);
  EXPECT_EQ(files(), (std::set<std::string>{"run.log", "rank.pid", "t_0.json"})) << read_text(path("run.log"));
  const nlohmann::json later = summary_by_stats(path("t_0.json"));
  EXPECT_EQ(later["rank"], 0);
  EXPECT_EQ(later["steps"].size(), 4u) << "the steps flushed before the kill are summarised";
}

}  // namespace
