// On-demand trace windows: `cudascope trace --pid` around a program run with
// `cudascope run --metrics ADDR:PORT --no-trace` writes a trace of just that window.
#include "metrics_text.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;
using namespace std::chrono_literals;

namespace {

struct Kernels {
  std::size_t count = 0;
  double span_s = 0;  // first kernel start to last kernel end
};

Kernels kernels_in(const std::string& path) {
  std::ifstream file(path);
  const auto trace = nlohmann::json::parse(file, nullptr, false);
  Kernels k;
  if (trace.is_discarded()) return k;
  double first = 1e300, last = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("cat", "") != "kernel" || e.value("ph", "") != "X") continue;
    ++k.count;
    first = std::min(first, e.at("ts").get<double>());
    last = std::max(last, e.at("ts").get<double>() + e.at("dur").get<double>());
  }
  if (k.count > 0) k.span_s = (last - first) / 1e6;
  return k;
}

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(TraceWindowTest, TraceCommandRecordsOnlyTheWindow) {
  char pattern[] = "/tmp/cudascope-window-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  const int port = cudascope::testing::free_port();
  const std::string bind = "127.0.0.1:" + std::to_string(port);
  const std::string full = dir + "/full.json";
  // About 4 s of 10 ms kernels, metrics only.
  std::vector<std::string> args{CUDASCOPE_CLI_PATH, "run",  "--metrics", bind, "--no-trace", "-o", full, "--",
                                CUDASCOPE_CLI_PATH, "demo", "--iterations", "400", "--kernel-ms", "10"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  setenv("CUDASCOPE_BACKEND", "sim", 1);
  pid_t run = 0;
  ASSERT_EQ(posix_spawn(&run, CUDASCOPE_CLI_PATH, nullptr, nullptr, argv.data(), environ), 0);
  bool serving = false;
  for (int i = 0; i < 100 && !serving; ++i) {
    std::this_thread::sleep_for(100ms);
    serving = cudascope::testing::http_get(port, "/trace").has_value();
  }
  ASSERT_TRUE(serving) << "the program never served /trace on " << bind;
  // The wrapper's pid: `trace` finds the program under it.
  const std::string window = dir + "/window.json";
  const int rc = shell(std::string("timeout 60 ") + CUDASCOPE_CLI_PATH + " trace --pid " + std::to_string(run) +
                       " --duration 1s -o " + window);
  int status = 0;
  waitpid(run, &status, 0);
  ASSERT_EQ(rc, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const Kernels k = kernels_in(window);
  EXPECT_GE(k.count, 20u) << "a 1 s window of 10 ms kernels";
  EXPECT_LT(k.count, 300u) << "the window holds a part of the run, not all of it";
  EXPECT_LT(k.span_s, 2.0);
  EXPECT_FALSE(std::filesystem::exists(full)) << "--no-trace writes no full trace";
  std::filesystem::remove_all(dir);
}

TEST(TraceWindowTest, AProcessWithoutLiveMetricsIsAnError) {
  const std::string command = std::string(CUDASCOPE_CLI_PATH) + " trace --pid " + std::to_string(getpid()) +
                              " --duration 1s -o /tmp/never.json 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[1024];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(output, ::testing::HasSubstr("--pid " + std::to_string(getpid())));
  EXPECT_THAT(output, ::testing::HasSubstr("serves no live metrics"));
}

TEST(TraceWindowTest, DurationMustBeATime) {
  const std::string command = std::string(CUDASCOPE_CLI_PATH) + " trace --pid 1 --duration soon 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[1024];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  EXPECT_NE(WEXITSTATUS(pclose(pipe)), 0);
  EXPECT_THAT(output, ::testing::HasSubstr("--duration 'soon'"));
}

TEST(TraceWindowTest, RunChecksTheMetricsAddressBeforeStartingTheProgram) {
  for (const std::string bind : {"nonsense", "127.0.0.1:notaport", "203.0.113.1:9401"}) {
    const std::string command = std::string(CUDASCOPE_CLI_PATH) + " run --metrics " + bind +
                                " --no-trace -- /bin/echo ran 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    std::string output;
    char buffer[1024];
    for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    EXPECT_NE(WEXITSTATUS(pclose(pipe)), 0) << bind;
    EXPECT_THAT(output, ::testing::HasSubstr("--metrics"));
    EXPECT_THAT(output, ::testing::HasSubstr("'" + bind + "'"));
    EXPECT_THAT(output, ::testing::Not(::testing::HasSubstr("ran"))) << "the program must not start";
  }
}
