// Several ranks end to end on the sim backend: `cudascope run -o trace_%r.json.gz` around a
// launcher that starts two ranks (as `cudascope run -- torchrun ...`), and around each rank
// (as `torchrun ... cudascope run ...`); each rank on its own sim device; every rank's file
// with its distributedInfo; `cudascope stats` of both with a row per rank and the slowest
// rank per step; fixed names and name collisions with several processes.
#include "fresh_directory_test.h"
#include "run_cli.h"

#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace {

using cudascope::testing::run_cli;
using cudascope::testing::run_shell;
namespace fs = std::filesystem;

// A fresh directory per test.
class RankCliTest : public cudascope::testing::FreshDirectoryTest {
 protected:
  RankCliTest() : FreshDirectoryTest("cudascope_rank_") {}
  // The trace files: each rank also writes its summary beside its trace at exit
  // (inject/exit_summary.h, tested in rank_exit_summary_test.cpp).
  std::set<std::string> traces() const {
    std::set<std::string> names = files();
    std::erase_if(names, [](const std::string& name) { return name.rfind("summary_", 0) == 0; });
    return names;
  }
};

const std::string kSim = "CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_DEVICES=2";

std::string rank_env(int rank) {
  return "RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) + " WORLD_SIZE=2";
}

// A launcher starting both ranks in the background, as torchrun does.
std::string two_ranks() {
  const std::string worker = RANK_WORKER_PATH;
  return "sh -c '" + rank_env(0) + " " + worker + " & " + rank_env(1) + " " + worker + " & wait'";
}

// The trace's distributedInfo, and the devices its kernels ran on.
void expect_rank_trace(const std::string& file, int rank) {
  SCOPED_TRACE(file);
  const auto loaded = cudascope::analysis::load_trace(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  EXPECT_TRUE(model.complete);
  EXPECT_EQ(model.rank, rank);
  EXPECT_EQ(model.local_rank, rank);
  EXPECT_EQ(model.world_size, 2);
  EXPECT_EQ(model.distributed_backend, "nccl");
  EXPECT_FALSE(model.host.empty());
  std::set<int> devices;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const auto& e = model.event(i);
    if (model.cat(e) == "kernel") devices.insert(model.processes()[model.tracks()[e.track].process].device);
  }
  EXPECT_EQ(devices, std::set<int>{rank}) << "each rank on the sim device its LOCAL_RANK names";
}

// `cudascope stats` of both: a row per rank, four steps matched by name with both ranks in
// each. Only lower bounds of times are asserted (a spin kernel lasts at least its length; a
// loaded CI machine may stretch anything): rank 1's 3 ms kernels against rank 0's 1 ms.
void expect_rank_tables(const std::string& a, const std::string& b) {
  const auto result = run_cli("", "stats --json " + a + " " + b);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto report = nlohmann::json::parse(result.output);
  ASSERT_EQ(report["ranks"].size(), 2u);
  EXPECT_EQ(report["ranks"][0]["rank"], 0);
  EXPECT_EQ(report["ranks"][1]["rank"], 1);
  EXPECT_EQ(report["steps_matched_by"], "name");
  ASSERT_EQ(report["steps"].size(), 4u);
  int compared = 0;
  for (const auto& step : report["steps"]) {
    EXPECT_EQ(step["ranks"], 2);
    EXPECT_NE(step["slowest_rank"], step["fastest_rank"]) << step.dump();
    EXPECT_EQ(step["slowest_over_fastest_ns"].get<std::int64_t>(),
              step["slowest_ns"].get<std::int64_t>() - step["fastest_ns"].get<std::int64_t>());
    EXPECT_GE(step["slowest_ns"].get<std::int64_t>(), 3'000'000) << "rank 1's step holds a 3 ms kernel: " << step.dump();
  }
  for (const auto& [label, count] : report["slowest_counts"].items()) compared += count.get<int>();
  EXPECT_EQ(compared, 4);
  for (const auto& rank : report["ranks"]) {
    EXPECT_EQ(rank["steps"], 4);
    EXPECT_GE(rank["compute_ns"].get<std::int64_t>(), 4 * (1 + 2 * rank["rank"].get<std::int64_t>()) * 1'000'000) << rank.dump();
    EXPECT_EQ(rank["communication_ns"], 0) << "the sim runs no NCCL kernels";
  }
}

TEST_F(RankCliTest, LauncherUnderRunWritesOneTracePerRankFromThePattern) {
  const auto result = run_cli(kSim, "run -o " + path("trace_%r.json.gz") + " -- " + two_ranks());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(files(), (std::set<std::string>{"trace_0.json.gz", "trace_1.json.gz", "summary_trace_0.json", "summary_trace_1.json"}));
  EXPECT_NE(result.output.find("trace_0.json.gz"), std::string::npos) << "the wrapper lists every file: " << result.output;
  EXPECT_NE(result.output.find("trace_1.json.gz"), std::string::npos) << result.output;
  expect_rank_trace(path("trace_0.json.gz"), 0);
  expect_rank_trace(path("trace_1.json.gz"), 1);
  expect_rank_tables(path("trace_0.json.gz"), path("trace_1.json.gz"));
}

TEST_F(RankCliTest, RunInsideEachRankWritesOneTracePerRank) {
  const std::string run = std::string(CUDASCOPE_CLI_PATH) + " run -o " + path("trace_%r.json") + " -- " + RANK_WORKER_PATH;
  const auto result = run_shell(kSim + " sh -c '" + rank_env(0) + " " + run + " & " + rank_env(1) + " " + run + " & wait'");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(files(), (std::set<std::string>{"trace_0.json", "trace_1.json", "summary_trace_0.json", "summary_trace_1.json"}));
  expect_rank_trace(path("trace_0.json"), 0);
  expect_rank_trace(path("trace_1.json"), 1);
}

TEST_F(RankCliTest, SummariesWrittenBesideTheTracesMergeAsTheTracesDo) {
  ASSERT_EQ(run_cli(kSim, "run -o " + path("trace_%r.json.gz") + " -- " + two_ranks()).exit_code, 0);
  for (int rank : {0, 1}) {
    const std::string r = std::to_string(rank);
    const auto result = run_cli("", "stats --summary-out " + path("summary_" + r + ".json") + " " + path("trace_" + r + ".json.gz"));
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  fs::remove(path("trace_0.json.gz"));
  fs::remove(path("trace_1.json.gz"));
  expect_rank_tables(path("summary_0.json"), path("summary_1.json"));
}

TEST_F(RankCliTest, FixedNameGivesEveryWorkerItsOwnFile) {
  const auto result = run_cli(kSim, "run -o " + path("fixed.json") + " -- " + two_ranks());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto names = traces();
  ASSERT_EQ(names.size(), 2u) << "the launcher uses no CUDA; each worker writes fixed.<pid>.json";
  for (const std::string& name : names) {
    EXPECT_TRUE(name.rfind("fixed.", 0) == 0 && name.size() > 11 && name.substr(name.size() - 5) == ".json") << name;
    const auto loaded = cudascope::analysis::load_trace(path(name));
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    EXPECT_TRUE(loaded.model->complete) << name << " was written by one process only";
  }
}

TEST_F(RankCliTest, TwoProcessesOfOneRankNeverShareAFile) {
  const std::string worker = RANK_WORKER_PATH;
  const std::string both = "sh -c '" + rank_env(0) + " " + worker + " & " + rank_env(0) + " " + worker + " & wait'";
  const auto result = run_cli(kSim, "run -o " + path("trace_%r.json") + " -- " + both);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto names = traces();
  ASSERT_EQ(names.size(), 2u) << result.output;
  EXPECT_EQ(names.count("trace_0.json"), 1u);
  EXPECT_EQ(files().size(), 4u) << "each process's summary beside its own trace";
  for (const std::string& name : names) {
    const auto loaded = cudascope::analysis::load_trace(path(name));
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    EXPECT_TRUE(loaded.model->complete) << name;
    EXPECT_EQ(loaded.model->rank, 0);
  }
}

TEST_F(RankCliTest, PatternWithoutRankNamesTheFileNorankAndPidAndHost) {
  const auto result =
      run_cli("env -u RANK -u LOCAL_RANK -u WORLD_SIZE " + kSim, "run -o " + path("t_%r_%p_%h_%%.json") + " -- " + RANK_WORKER_PATH);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto names = files();
  ASSERT_EQ(names.size(), 1u);
  const std::string name = *names.begin();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(name.rfind("t_norank_", 0), 0u) << name;
  EXPECT_NE(name.find("_" + std::string(host) + "_%.json"), std::string::npos) << name;
  const auto loaded = cudascope::analysis::load_trace(path(name));
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  EXPECT_EQ(loaded.model->rank, -1) << "no distributedInfo without RANK";
}

TEST_F(RankCliTest, UnknownDirectiveIsRefusedBeforeTheProgramStarts) {
  const std::string marker = path("started");
  const auto result = run_cli(kSim, "run -o " + path("trace_%x.json") + " -- touch " + marker);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("--output"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("'%x'"), std::string::npos) << result.output;
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(RankCliTest, SummaryOutTakesOneTrace) {
  const auto result = run_cli("", "stats --summary-out " + path("s.json") + " a.json b.json");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.output.find("--summary-out takes exactly one trace"), std::string::npos) << result.output;
}

}  // namespace
