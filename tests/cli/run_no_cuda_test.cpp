// `cudascope run` around processes that load the injection library but never use CUDA, on the
// sim backend: a launcher that starts the runtime (as a launcher loads the CUDA driver) and
// then a CUDA child, a lone such process, one ended by SIGTERM. None of them may leave a trace
// file (`stats trace_*.json.gz` would list it as a rank "-"); their CUDA children must, through
// exit, SIGTERM and SIGKILL; an NVTX-only process keeps its trace; a process whose file is
// named late never overwrites the trace of one that ended meanwhile; a program ended by a
// signal is said to be, with a trace or metrics only.
#include "fresh_directory_test.h"
#include "../metrics/metrics_text.h"
#include "nvtx_message.h"
#include "run_cli.h"
#include "test_support.h"

#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;
using cudascope::testing::CliResult;
using cudascope::testing::run_cli;
namespace cuda = cudascope::cuda;

// --- Child modes: this executable, run under `cudascope run` ---

// A launcher: starts the runtime without using a device (the sim backend loads the injection
// library, as the driver does in a launcher that counts GPUs), prints its pid, then runs
// argv[3...] and returns its exit code; with no command, returns argv[2]. With
// `close_descriptors`, the command starts with only stdin, stdout and stderr open, as
// torchrun's workers and Python's subprocess do.
int launch(int argc, char** argv, bool close_descriptors) {
  if (cuda::device_count() < 1) return 90;
  std::printf("launcher %ld\n", static_cast<long>(getpid()));
  std::fflush(stdout);
  if (argc < 4) return argc > 2 ? std::atoi(argv[2]) : 0;
  const pid_t child = fork();
  if (child == 0) {
    if (close_descriptors) {
      for (int fd = 3; fd < 1024; ++fd) close(fd);
    }
    execv(argv[3], argv + 3);
    _exit(127);
  }
  std::printf("child %ld\n", static_cast<long>(child));
  std::fflush(stdout);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int launcher(int argc, char** argv) { return launch(argc, argv, false); }
int closing_launcher(int argc, char** argv) { return launch(argc, argv, true); }

// The runtime started, no device used, until a signal ends it.
int idle(int, char**) {
  if (cuda::device_count() < 1) return 90;
  std::printf("idle\n");
  std::fflush(stdout);
  for (;;) pause();
}

// NVTX ranges and nothing of CUDA.
int nvtx_only(int, char**) {
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA("load batch");
    nvtxRangePop();
  }
  return 0;
}

// Three training steps, the first of which makes an NCCL communicator, as PyTorch does at a
// process group's first collective: NCCL pushes its init range with nvtxDomainRangePushEx and
// pops it with the payload extension's nvtxRangePopPayload.
int nccl_init_in_first_step(int, char**) {
  const nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  for (int i = 0; i < 3; ++i) {
    nvtxRangePushA(("step " + std::to_string(i)).c_str());
    if (i == 0) {
      const nvtxEventAttributes_t init = cudascope::testing::nvtx_message("ncclCommInitRankConfig");
      nvtxDomainRangePushEx(nccl, &init);
      nvtxRangePopPayload(nccl, nullptr, 0);
    }
    nvtxRangePop();
  }
  return 0;
}

// Kernels until killed; raises SIGKILL itself after argv[2] steps when given.
int endless(int argc, char** argv) {
  const long kill_after = argc > 2 ? std::atol(argv[2]) : -1;
  cuda::Stream stream(0);
  for (long i = 0;; ++i) {
    if (i == kill_after) raise(SIGKILL);
    cuda::busy_wait(std::chrono::microseconds(50), stream);
    stream.synchronize();
  }
}

// Starts the runtime, waits argv[2] ms, runs three kernels, lives argv[3] ms more.
int cuda_after(int argc, char** argv) {
  if (argc < 4 || cuda::device_count() < 1) return 90;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(argv[2])));
  cuda::Stream stream(0);
  for (int i = 0; i < 3; ++i) cuda::busy_wait(std::chrono::microseconds(100), stream);
  stream.synchronize();
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(argv[3])));
  return 0;
}

const cudascope::testing::ChildModeRegistrar cuda_after_mode("--cuda-after", &cuda_after);
const cudascope::testing::ChildModeRegistrar launcher_mode("--launcher", &launcher);
const cudascope::testing::ChildModeRegistrar closing_launcher_mode("--closing-launcher", &closing_launcher);
const cudascope::testing::ChildModeRegistrar idle_mode("--idle", &idle);
const cudascope::testing::ChildModeRegistrar nvtx_mode("--nvtx-only", &nvtx_only);
const cudascope::testing::ChildModeRegistrar nccl_init_mode("--nccl-init-in-first-step", &nccl_init_in_first_step);
const cudascope::testing::ChildModeRegistrar endless_mode("--endless", &endless);

std::string self_path() {
  char self[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return std::string(self, n > 0 ? static_cast<std::size_t>(n) : 0);
}

// The number after `label ` in a child's output ("launcher 123"), or -1.
long printed_pid(const std::string& output, const std::string& label) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(label + " ", 0) == 0) return std::atol(line.c_str() + label.size() + 1);
  }
  return -1;
}

int count_kernels(const cudascope::analysis::Trace& trace) {
  int n = 0;
  for (const auto& e : trace.events) n += e.ph == "X" && e.cat == "kernel";
  return n;
}

const std::string kSim = "CUDASCOPE_BACKEND=sim";

// `run -o PATTERN` around a launcher that starts `command` with its descriptors closed (as
// torchrun starts its workers): run's result, and the worker's pid (-1 when it printed none).
std::pair<CliResult, long> run_closing_launcher(const std::string& pattern, const std::string& command) {
  CliResult result = run_cli(kSim, "run -o " + pattern + " -- " + self_path() + " --closing-launcher 0 " + command);
  const long child = printed_pid(result.output, "child");
  return {std::move(result), child};
}

// A fresh directory per test; the traces are whatever files appear in it.
class RunNoCudaTest : public cudascope::testing::FreshDirectoryTest {
 protected:
  RunNoCudaTest() : FreshDirectoryTest("cudascope_run_no_cuda_") {}
  // `cudascope run` started in the background; its pid, and the file its output goes to.
  pid_t start_run(const std::string& arguments) {
    const std::string log = path("run.log");
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("CUDASCOPE_BACKEND", "sim", 1);
      const std::string command = std::string("exec ") + CUDASCOPE_CLI_PATH + " run " + arguments + " >" + log + " 2>&1";
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  }
  static int wait_exit_code(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string log() const {
    std::ifstream in(path("run.log"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Waits until a file of the directory holds a kernel; its name, or empty after 30 s.
  std::string wait_for_kernel_on_disk() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      for (const std::string& name : files()) {
        std::ifstream in(path(name));
        std::stringstream text;
        text << in.rdbuf();
        if (text.str().find("\"cat\":\"kernel\"") != std::string::npos) return name;
      }
    }
    return {};
  }
};

TEST_F(RunNoCudaTest, LauncherThatNeverUsesCudaWritesNoTraceAndItsCudaChildDoes) {
  const std::string demo = std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2";
  const auto result = run_cli(kSim, "run -o " + path("t_%p.json") + " -- " + self_path() + " --launcher 0 " + demo);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const long launcher = printed_pid(result.output, "launcher");
  const long child = printed_pid(result.output, "child");
  ASSERT_GT(launcher, 0) << result.output;
  ASSERT_GT(child, 0) << result.output;
  EXPECT_EQ(files(), std::set<std::string>{"t_" + std::to_string(child) + ".json"})
      << "the launcher loaded the injection library but used no CUDA: " << result.output;
  EXPECT_NE(result.output.find("t_" + std::to_string(child) + ".json"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("t_" + std::to_string(launcher) + ".json"), std::string::npos)
      << "run lists no file for the launcher: " << result.output;
  const auto read = cudascope::analysis::read_trace(path("t_" + std::to_string(child) + ".json"));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete);
  EXPECT_GT(count_kernels(read.trace), 0);
  EXPECT_EQ(cudascope::analysis::validate_trace(read.trace), std::vector<std::string>{});
}

TEST_F(RunNoCudaTest, AWorkerStartedWithItsDescriptorsClosedReportsItsTraceAndCounts) {
  // torchrun's workers start with their descriptors closed: they reach run's progress channel
  // by its path (inject/progress_channel.h), so run counts their events as its own child's.
  const auto [result, child] = run_closing_launcher(path("t_%p.json"), std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  ASSERT_GT(child, 0) << result.output;
  const std::string trace = path("t_" + std::to_string(child) + ".json");
  EXPECT_EQ(files(), std::set<std::string>{"t_" + std::to_string(child) + ".json"}) << result.output;
  EXPECT_EQ(result.output.find("could not report"), std::string::npos) << result.output;
  const std::size_t line = result.output.find("cudascope: trace " + trace + " (");
  ASSERT_NE(line, std::string::npos) << result.output;
  const long long events = std::atoll(result.output.c_str() + line + std::string("cudascope: trace " + trace + " (").size());
  const auto read = cudascope::analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_GT(events, 0) << result.output;
}

TEST_F(RunNoCudaTest, RunListsTheTraceOfAWorkerThatCannotReachItsProgressChannel) {
  // A worker that cannot open the channel (its environment scrubbed, another mount namespace):
  // run must not say that no process used CUDA, and lists the file the pattern names.
  const auto [result, child] = run_closing_launcher(
      path("t_%p.json"), "/usr/bin/env -u CUDASCOPE_PROGRESS " + std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  ASSERT_GT(child, 0) << result.output;
  const std::string trace = path("t_" + std::to_string(child) + ".json");
  EXPECT_EQ(files(), std::set<std::string>{"t_" + std::to_string(child) + ".json"}) << result.output;
  EXPECT_EQ(result.output.find("no process of the program used CUDA"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cudascope: trace " + trace + " (its process could not report"), std::string::npos)
      << result.output;
}

TEST_F(RunNoCudaTest, WithoutAPlaceForTheProgressChannelRunRecordsAndSaysSo) {
  const std::string missing = path("no-such-dir");
  const auto result = run_cli("TMPDIR=" + missing + " " + kSim,
                              "run -o " + path("t.json") + " -- " + std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("mkdtemp " + missing), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("recording without progress"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cudascope: trace " + path("t.json") + " (its process could not report"), std::string::npos)
      << result.output;
  const auto read = cudascope::analysis::read_trace(path("t.json"));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_GT(count_kernels(read.trace), 0);
}

TEST_F(RunNoCudaTest, RunLeavesNoProgressChannelBehind) {
  // The FIFO and its directory go with run; the program reported through them meanwhile.
  const std::string tmp = path("tmp");
  std::filesystem::create_directories(tmp);
  const auto result = run_cli("TMPDIR=" + tmp + " " + kSim,
                              "run -o " + path("t.json") + " -- " + std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.find("recording without progress"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cudascope: trace " + path("t.json") + " ("), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("could not report"), std::string::npos) << result.output;
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << result.output;
}

TEST_F(RunNoCudaTest, AProgressChannelInRunsOwnEnvironmentIsNotPassedOn) {
  // CUDASCOPE_PROGRESS left in the shell (from an outer run) names a FIFO this run's program
  // must not write to; here run has no channel of its own either (TMPDIR missing).
  const std::string fifo = path("outer");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  const auto result = run_cli("CUDASCOPE_PROGRESS=" + fifo + " TMPDIR=" + path("no-such-dir") + " " + kSim,
                              "run -o " + path("t.json") + " -- " + std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  char buffer[64];
  EXPECT_LE(read(reader, buffer, sizeof buffer), 0) << "the program wrote to the outer channel";
  close(reader);
  std::filesystem::remove(fifo);
}

TEST_F(RunNoCudaTest, RunListsNoFileOfAnEarlierRunOrOfAnotherName) {
  // The pattern's files written before this run, and other files beside them, are not this run's.
  { std::ofstream(path("t_1.json")) << "{}"; }
  { std::ofstream(path("t_x.json")) << "{}"; }
  { std::ofstream(path("other.json")) << "{}"; }
  const auto old = fs::last_write_time(path("t_1.json")) - std::chrono::hours(1);
  fs::last_write_time(path("t_1.json"), old);
  const auto result = run_cli(kSim, "run -o " + path("t_%p.json") + " -- " + self_path() + " --launcher 0");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("no process of the program used CUDA or NVTX"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("cudascope: trace"), std::string::npos) << result.output;
}

TEST_F(RunNoCudaTest, RunListsNoFileOfAnotherRunGivenTheSamePattern) {
  // One run per rank (`torchrun ... cudascope run -o t_%r.json -- python ...`): rank 1's run
  // writes its file while rank 0's still runs, and rank 0's run must not take it for a file
  // of its own whose process could not report.
  const std::string cli = CUDASCOPE_CLI_PATH;
  const std::string pattern = path("t_%r.json");
  const std::string done = path("rank1.done");
  const std::string rank_0 = "RANK=0 " + kSim + " " + cli + " run -o " + pattern + " -- sh -c '" + cli +
                             " demo --iterations 2 >/dev/null && while [ ! -e " + done + " ]; do sleep 0.05; done'";
  const std::string rank_1 = "RANK=1 " + kSim + " " + cli + " run -o " + pattern + " -- " + cli + " demo --iterations 2";
  const auto result = cudascope::testing::run_shell(rank_0 + " > " + path("rank0.log") + " 2>&1 & rank0=$!; " + rank_1 + " > " +
                                path("rank1.log") + " 2>&1; touch " + done + "; wait $rank0; echo rank0=$?; cat " +
                                path("rank0.log"));
  ASSERT_NE(result.output.find("rank0=0"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("cudascope: trace " + path("t_0.json") + " ("), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find(path("t_1.json")), std::string::npos) << "rank 1's run wrote it: " << result.output;
  const auto read = cudascope::analysis::read_trace(path("t_1.json"));
  ASSERT_TRUE(read.ok()) << read.error;
}

TEST_F(RunNoCudaTest, LauncherWithoutRankWritesNoNorankFileBesideTheRanks) {
  // The finding: `run -o trace_%r.json -- torchrun ...` left trace_norank.json for torchrun.
  const std::string rank_0 = "/usr/bin/env RANK=0 " + std::string(CUDASCOPE_CLI_PATH) + " demo --iterations 2";
  const auto result =
      run_cli("env -u RANK " + kSim, "run -o " + path("trace_%r.json") + " -- " + self_path() + " --launcher 0 " + rank_0);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // Rank 0 also writes its summary beside its trace at exit (inject/exit_summary.h).
  EXPECT_EQ(files(), (std::set<std::string>{"trace_0.json", "summary_trace_0.json"})) << result.output;
  EXPECT_GT(printed_pid(result.output, "launcher"), 0) << "the launcher started the runtime: " << result.output;
}

TEST_F(RunNoCudaTest, AProcessThatUsesCudaLateNeverOverwritesTheTraceOfOneThatEndedMeanwhile) {
  // Both rank 0, both recording from the start; the first writes trace_0.json and ends before
  // the second first uses CUDA (when its file is named): the second writes trace_0.<pid>.json.
  const std::string self = self_path();
  const std::string both = "sh -c 'RANK=0 " + self + " --cuda-after 0 100 & RANK=0 " + self + " --cuda-after 1500 0 & wait'";
  const auto result = run_cli(kSim, "run -o " + path("trace_%r.json") + " -- " + both);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto names = files();
  // Each rank-0 process's summary beside its own trace (inject/exit_summary.h).
  EXPECT_EQ(std::erase_if(names, [](const std::string& name) { return name.rfind("summary_", 0) == 0; }), 2u) << result.output;
  ASSERT_EQ(names.size(), 2u) << result.output;
  EXPECT_EQ(names.count("trace_0.json"), 1u) << result.output;
  for (const std::string& name : names) {
    const auto read = cudascope::analysis::read_trace(path(name));
    ASSERT_TRUE(read.ok()) << read.error;
    EXPECT_TRUE(read.trace.complete) << name;
    EXPECT_EQ(count_kernels(read.trace), 3) << name << " holds one process's kernels";
  }
}

TEST_F(RunNoCudaTest, ProcessThatNeverUsesCudaWritesNoTraceAndRunSaysSoAndPassesItsExitCode) {
  for (const std::string& output : {path("fixed.json"), path("t_%r_%p.json.gz")}) {
    const auto result = run_cli(kSim, "run -o " + output + " -- " + self_path() + " --launcher 5");
    EXPECT_EQ(result.exit_code, 5) << result.output;
    EXPECT_GT(printed_pid(result.output, "launcher"), 0) << "the runtime started: " << result.output;
    EXPECT_EQ(files(), std::set<std::string>{}) << result.output;
    EXPECT_NE(result.output.find("no trace written to " + output + " (no process of the program used CUDA or NVTX)"),
              std::string::npos)
        << result.output;
  }
  const auto devices = run_cli(kSim, "run -o " + path("devices.json") + " -- " + CUDASCOPE_CLI_PATH + " devices");
  EXPECT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_NE(devices.output.find("cudascope sim device"), std::string::npos) << devices.output;
  EXPECT_EQ(files(), std::set<std::string>{}) << "listing devices is no CUDA work recorded: " << devices.output;
}

TEST_F(RunNoCudaTest, ProcessThatCallsOnlyNvtxKeepsItsTrace) {
  const auto result = run_cli(kSim, "run -o " + path("nvtx.json") + " -- " + self_path() + " --nvtx-only");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  ASSERT_EQ(files(), std::set<std::string>{"nvtx.json"}) << result.output;
  const auto read = cudascope::analysis::read_trace(path("nvtx.json"));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete);
  int ranges = 0;
  for (const auto& e : read.trace.events) ranges += e.ph == "B" && e.name == "load batch";
  EXPECT_EQ(ranges, 3);
}

TEST_F(RunNoCudaTest, NcclsInitRangeEndedThroughThePayloadExtensionLeavesTheStepsApart) {
  // Through the real NVTX loader: the injection library's InitializeInjectionNvtxExtension.
  const auto result = run_cli(kSim, "run -o " + path("steps.json") + " -- " + self_path() + " --nccl-init-in-first-step");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto read = cudascope::analysis::read_trace(path("steps.json"));
  ASSERT_TRUE(read.ok()) << read.error;
  // Each range as the trace pairs its "B" and "E" (per thread, innermost first).
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
  std::map<std::int64_t, std::vector<const cudascope::analysis::TraceEvent*>> open;
  for (const auto& e : read.trace.events) {
    if (e.ph == "B") open[e.tid].push_back(&e);
    if (e.ph == "E" && !open[e.tid].empty()) {
      ranges[open[e.tid].back()->name] = {open[e.tid].back()->ts_ns, e.ts_ns};
      open[e.tid].pop_back();
    }
  }
  ASSERT_EQ(ranges.size(), 4u) << result.output;
  EXPECT_LE(ranges["ncclCommInitRankConfig"].second, ranges["step 0"].second) << "NCCL's range ends inside its step";
  EXPECT_LE(ranges["step 0"].second, ranges["step 1"].first) << "step 0 ends before step 1 begins";
  EXPECT_LE(ranges["step 1"].second, ranges["step 2"].first);
}

TEST_F(RunNoCudaTest, ProcessEndedBySigtermWithoutUsingCudaWritesNoTrace) {
  const pid_t run = start_run("-o " + path("t_%p.json") + " -- " + self_path() + " --idle");
  // The injection library records once the runtime has started; then past a periodic flush.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (log().find("idle\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(run, SIGTERM);  // run forwards it to the program
  EXPECT_EQ(wait_exit_code(run), 128 + SIGTERM) << log();
  EXPECT_EQ(files(), std::set<std::string>{"run.log"}) << log();
  EXPECT_NE(log().find("no process of the program used CUDA or NVTX"), std::string::npos) << log();
}

TEST_F(RunNoCudaTest, CudaProcessEndedBySigtermLeavesAFinishedTrace) {
  const pid_t run = start_run("-o " + path("t_%p.json") + " -- " + self_path() + " --endless");
  const std::string trace = wait_for_kernel_on_disk();
  kill(run, SIGTERM);
  EXPECT_EQ(wait_exit_code(run), 128 + SIGTERM) << log();
  ASSERT_FALSE(trace.empty()) << "the trace was streamed to disk while recording: " << log();
  const auto read = cudascope::analysis::read_trace(path(trace));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete) << "finished before the signal's default action";
  EXPECT_FALSE(read.trace.repaired);
  EXPECT_GT(count_kernels(read.trace), 0);
}

TEST_F(RunNoCudaTest, CudaProcessKilledWithSigkillLeavesAReadableTrace) {
  const auto result = run_cli(kSim, "run -o " + path("t_%p.json") + " -- " + self_path() + " --endless 3000");
  EXPECT_EQ(result.exit_code, 128 + SIGKILL) << result.output;
  const auto names = files();
  ASSERT_EQ(names.size(), 1u) << result.output;
  std::ifstream in(path(*names.begin()));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"truncated\":true}}"), std::string::npos) << "closed by cudascope run";
  const auto read = cudascope::analysis::read_trace(path(*names.begin()));
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_GT(count_kernels(read.trace), 0) << "3000 steps outlast several periodic flushes";
  EXPECT_EQ(cudascope::analysis::validate_trace(read.trace), std::vector<std::string>{});
}

// A crash must not pass for the program's own exit code: run names the signal, whether it
// wrote a trace or served metrics only (where there is no trace to repair or report).
TEST_F(RunNoCudaTest, RunNamesTheSignalThatEndedTheProgramWithATraceOrMetricsOnly) {
  const std::string program = " -- " + self_path() + " --endless 300";
  const auto traced = run_cli(kSim, "run -o " + path("t.json") + program);
  EXPECT_EQ(traced.exit_code, 128 + SIGKILL) << traced.output;
  EXPECT_NE(traced.output.find("the program ended by signal 9 (Killed); the trace holds"), std::string::npos)
      << traced.output;
  const std::string address = "127.0.0.1:" + std::to_string(cudascope::testing::free_port());
  const auto metrics_only = run_cli(kSim, "run --metrics " + address + " --no-trace" + program);
  EXPECT_EQ(metrics_only.exit_code, 128 + SIGKILL) << metrics_only.output;
  EXPECT_NE(metrics_only.output.find("the program ended by signal 9 (Killed)\n"), std::string::npos)
      << metrics_only.output;
}

}  // namespace
