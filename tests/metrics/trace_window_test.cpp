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
#include <iterator>
#include <thread>
#include <vector>

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
    serving = cudascope::testing::http_get(port, "/metrics").has_value();
  }
  ASSERT_TRUE(serving) << "the program never served /metrics on " << bind;
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
  // A metrics-only run's defaults (ActivitySet::metrics_only_defaults), as its header says.
  std::ifstream window_file(window);
  const auto header = nlohmann::json::parse(window_file, nullptr, false);
  ASSERT_FALSE(header.is_discarded());
  const std::string activities = header["cudascope"].value("activities", "");
  EXPECT_NE(activities.find("kernel"), std::string::npos) << header["cudascope"].dump();
  EXPECT_EQ(activities.find("sync"), std::string::npos) << activities;
  EXPECT_EQ(activities.find("launch"), std::string::npos) << activities;
  EXPECT_FALSE(std::filesystem::exists(full)) << "--no-trace writes no full trace";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().rfind("cudascope-window-", 0), std::string::npos)
        << "the window file was moved to -o: " << entry.path();
  }
  std::filesystem::remove_all(dir);
}

namespace {

// `cudascope run --metrics --no-trace` around a 4 s demo; the program's pid and its token.
struct LiveJob {
  std::string dir;
  int port = 0;
  pid_t run = 0;
  pid_t program = 0;
  std::string token;

  LiveJob() {
    char pattern[] = "/tmp/cudascope-window-XXXXXX";
    dir = mkdtemp(pattern);
    port = cudascope::testing::free_port();
    std::vector<std::string> args{CUDASCOPE_CLI_PATH, "run", "--metrics", "127.0.0.1:" + std::to_string(port), "--no-trace",
                                  "-o", dir + "/full.json", "--", CUDASCOPE_CLI_PATH, "demo", "--iterations", "400",
                                  "--kernel-ms", "10"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    setenv("CUDASCOPE_BACKEND", "sim", 1);
    posix_spawn(&run, CUDASCOPE_CLI_PATH, nullptr, nullptr, argv.data(), environ);
    for (int i = 0; i < 100 && !cudascope::testing::http_get(port, "/metrics"); ++i) std::this_thread::sleep_for(100ms);
    std::ifstream children("/proc/" + std::to_string(run) + "/task/" + std::to_string(run) + "/children");
    children >> program;
    std::ifstream environ_file("/proc/" + std::to_string(program) + "/environ", std::ios::binary);
    for (std::string entry; std::getline(environ_file, entry, '\0');) {
      if (entry.rfind("CUDASCOPE_TRACE_TOKEN=", 0) == 0) token = entry.substr(22);
    }
  }
  ~LiveJob() {
    kill(run, SIGTERM);
    int status = 0;
    waitpid(run, &status, 0);
    std::filesystem::remove_all(dir);
  }
  // The status code and body of GET path.
  std::pair<int, std::string> get(const std::string& path) const {
    const auto response = cudascope::testing::http_exchange(
        port, "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if (!response || response->size() < 12) return {0, ""};
    const std::size_t body = response->find("\r\n\r\n");
    return {std::atoi(response->c_str() + 9), body == std::string::npos ? "" : response->substr(body + 4)};
  }
};

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

// Issue 25: any local user could make the job write any file it can write, through links.
TEST(TraceWindowTest, EndpointWritesOnlyForTheOwnerIntoItsDirectory) {
  LiveJob job;
  ASSERT_GT(job.program, 0);
  ASSERT_GE(job.token.size(), 16u) << "run gives the program a token";
  const std::string victim = job.dir + "/victim.txt";
  std::ofstream(victim) << "keep me";

  // No token, a wrong token: refused, nothing written.
  EXPECT_EQ(job.get("/trace?duration=1&output=" + victim).first, 403);
  EXPECT_EQ(job.get("/trace").first, 403) << "even the status is the owner's";
  EXPECT_EQ(job.get("/trace?token=" + std::string(job.token.size(), '0') + "&duration=1").first, 403);
  // The owner cannot name the output either, nor smuggle a NUL, nor pass non-finite times.
  const std::string t = "/trace?token=" + job.token;
  EXPECT_EQ(job.get(t + "&duration=1&output=" + victim).first, 400);
  EXPECT_EQ(job.get(t + "&duration=1&output=" + job.dir + "/nul%00.txt.json").first, 400);
  EXPECT_EQ(job.get(t + "&duration=1&x=%00").first, 400);
  for (const char* bad : {"nan", "inf", "-1", "0", "3601", "1e400", "%4e%61%4e"}) {
    EXPECT_EQ(job.get(t + "&duration=" + bad).first, 400) << bad;
  }
  EXPECT_EQ(contents(victim), "keep me");
  EXPECT_FALSE(std::filesystem::exists(job.dir + "/nul"));

  // A link planted where the first window would go is skipped, never followed or replaced.
  const std::string first = job.dir + "/cudascope-window-" + std::to_string(job.program) + "-1.json";
  std::filesystem::create_symlink(victim, first);
  const auto started = job.get(t + "&duration=0.3");
  ASSERT_EQ(started.first, 200) << started.second;
  const std::string second = job.dir + "/cudascope-window-" + std::to_string(job.program) + "-2.json";
  EXPECT_EQ(started.second, "recording " + second + "\n");
  for (int i = 0; i < 50 && job.get(t).second.rfind("idle", 0) != 0; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(std::filesystem::is_symlink(first));
  EXPECT_EQ(contents(victim), "keep me");
  EXPECT_EQ(std::filesystem::status(second).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none)
      << "a window is the owner's alone (0600)";
  EXPECT_GT(kernels_in(second).count, 0u);
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
