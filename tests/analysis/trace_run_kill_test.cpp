// `cudascope run` itself killed with SIGKILL while its program records on the sim backend:
// the trace on disk, written by the injected library in flushed chunks, still loads (the
// reader reads it up to its last complete event) while the program goes on writing, and
// after the whole process group is killed.
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

std::size_t kernels_on_disk(const std::string& path) {
  const std::string text = read_text(path);
  std::size_t n = 0;
  for (std::size_t at = 0; (at = text.find("\"cat\":\"kernel\"", at)) != std::string::npos; ++at) ++n;
  return n;
}

std::size_t kernels_in(const analysis::TraceModel& model) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < model.event_count(); ++i) n += model.event(i).ph == 'X' && model.cat(model.event(i)) == "kernel";
  return n;
}

}  // namespace

TEST(TraceRunKillTest, ATraceLoadsAfterCudascopeRunIsKilledWithSigkill) {
  const std::string trace = temp_path("run_sigkill.json");
  std::filesystem::remove(trace);
  const pid_t run = fork();
  if (run == 0) {
    setpgid(0, 0);  // its own group, so the test can end the program it started too
    setenv("CUDASCOPE_BACKEND", "sim", 1);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execl(CUDASCOPE_CLI, CUDASCOPE_CLI, "run", "-o", trace.c_str(), "--", CUDASCOPE_CLI, "demo", "--iterations", "100000",
          "--kernel-ms", "0.05", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(run, run);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (kernels_on_disk(trace) < 50 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::size_t before_kill = kernels_on_disk(trace);
  kill(run, SIGKILL);  // `run` alone: its program goes on recording
  int status = 0;
  waitpid(run, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_GE(before_kill, 50u) << "the program recorded kernels on the sim backend";

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto during = analysis::load_trace(trace);
  ASSERT_TRUE(during.ok()) << during.error;
  EXPECT_TRUE(during.model->cut_short) << "still being written";
  EXPECT_GE(kernels_in(*during.model), before_kill);
  EXPECT_EQ(analysis::validate_trace(*during.model), std::vector<std::string>{});

  kill(-run, SIGKILL);  // now the program too
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto after = analysis::load_trace(trace);
  ASSERT_TRUE(after.ok()) << after.error;
  EXPECT_FALSE(after.model->complete) << "nobody closed it";
  EXPECT_GE(kernels_in(*after.model), kernels_in(*during.model));
  EXPECT_EQ(analysis::validate_trace(*after.model), std::vector<std::string>{});
  const auto stats = analysis::compute_stats(*after.model);
  ASSERT_FALSE(stats.kernels.empty());
  EXPECT_EQ(static_cast<std::size_t>(stats.kernels[0].count), kernels_in(*after.model));
  std::filesystem::remove(trace);
}
