// End to end on sim: `cudascope run` around a program that uses the runtime (this test
// executable in a child mode), and programs killed with SIGKILL while recording.
#include "test_support.h"

#include <cudascope/cuda/memory.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace cudascope;

namespace {

constexpr int kSteps = 20;

// A small training-loop-shaped workload: NVTX range per step, a kernel, an allocation.
int workload(int, char**) {
  cuda::Stream stream(0);
  for (int i = 0; i < kSteps; ++i) {
    cuda::nvtx::Range step("step " + std::to_string(i));
    void* p = cuda::caching_allocator_alloc(1 << 20, 0, stream);
    cuda::busy_wait(std::chrono::microseconds(100), stream);
    cuda::caching_allocator_delete(p);
  }
  stream.synchronize();
  std::printf("workload done\n");
  return 3;
}

// Runs until killed; kills itself with SIGKILL after argv[2] steps when given.
int endless(int argc, char** argv) {
  const long kill_after = argc > 2 ? std::atol(argv[2]) : -1;
  cuda::Stream stream(0);
  for (long i = 0;; ++i) {
    if (i == kill_after) raise(SIGKILL);
    cuda::nvtx::Range step("step");
    cuda::busy_wait(std::chrono::microseconds(50), stream);
    stream.synchronize();
  }
}

// The NVTX API beyond push/pop, as libraries use it: domains, attributes, registered
// strings, process-wide ranges, marks, thread names.
int nvtx_api(int, char**) {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("training");
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.colorType = NVTX_COLOR_ARGB;
  attributes.color = 0xff112233;
  attributes.category = 7;
  attributes.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  attributes.payload.llValue = -42;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = nvtxDomainRegisterStringA(domain, "forward");
  nvtxDomainRangePushEx(domain, &attributes);
  const nvtxRangeId_t load = nvtxRangeStartA("data loading");
  nvtxMarkA("checkpoint");
  nvtxRangeEnd(load);
  nvtxDomainRangePop(domain);
  nvtxNameOsThreadA(static_cast<std::uint32_t>(gettid()), "trainer");
  nvtxRangePushA("after naming");
  nvtxRangePop();
  return 0;
}

const cudascope::testing::ChildModeRegistrar nvtx_mode("--nvtx-api", &nvtx_api);
const cudascope::testing::ChildModeRegistrar workload_mode("--workload", &workload);
const cudascope::testing::ChildModeRegistrar endless_mode("--endless", &endless);

std::string self_path() {
  char self[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return std::string(self, n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
}

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::pair<int, std::string> finish(Child child) {
  std::string output;
  char buffer[4096];
  for (ssize_t n; (n = read(child.out, buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
  close(child.out);
  int status = 0;
  waitpid(child.pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), output};
}

int count_kernels(const analysis::Trace& trace) {
  int n = 0;
  for (const auto& e : trace.events) n += e.ph == "X" && e.cat == "kernel";
  return n;
}

}  // namespace

TEST(TraceEndToEndTest, CudascopeRunRecordsKernelsNvtxAndMemoryOfAProgramOnSimAndPassesItsExitCode) {
  const std::string trace = temp_path("run_trace.json");
  auto [code, output] = finish(spawn({CUDASCOPE_CLI, "run", "-o", trace, "--", self_path(), "--workload"},
                                     {{"CUDASCOPE_BACKEND", "sim"}}));
  EXPECT_EQ(code, 3) << "the child's exit code passes through";
  EXPECT_EQ(output, "workload done\n") << "the child's stdout is left alone";
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete);
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  EXPECT_EQ(read.trace.source, "sim");
  EXPECT_EQ(count_kernels(read.trace), kSteps);

  // Each step's range holds its launch call, on the same thread.
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> steps;
  std::vector<std::string> open;
  std::vector<std::int64_t> opened_at;
  std::vector<std::int64_t> launches;
  int memory_counters = 0;
  std::int64_t peak_allocated = 0;
  for (const auto& e : read.trace.events) {
    if (e.cat == "nvtx" && e.ph == "B") {
      open.push_back(e.name);
      opened_at.push_back(e.ts_ns);
    } else if (e.cat == "nvtx" && e.ph == "E") {
      steps[open.back()] = {opened_at.back(), e.ts_ns};
      open.pop_back();
      opened_at.pop_back();
    } else if (e.cat == "cuda_runtime" && e.name == "cudaLaunchKernel") {
      ASSERT_EQ(open.size(), 1u) << "a launch outside its step's range";
      launches.push_back(e.ts_ns);
    } else if (e.ph == "C" && e.name == "Device Memory") {
      ++memory_counters;
      const auto at = e.args_json.find("\"allocated\":");
      ASSERT_NE(at, std::string::npos) << e.args_json;
      peak_allocated = std::max<std::int64_t>(peak_allocated, std::stoll(e.args_json.substr(at + 12)));
    }
  }
  EXPECT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(launches.size(), static_cast<std::size_t>(kSteps));
  EXPECT_GE(memory_counters, 2 * kSteps) << "a counter sample per allocation and free";
  EXPECT_EQ(peak_allocated, 1 << 20);
  const auto stats = analysis::compute_stats(read.trace);
  ASSERT_EQ(stats.kernels.size(), 1u);
  EXPECT_EQ(stats.kernels[0].count, kSteps);
  EXPECT_GE(stats.kernels[0].min_ns, 100000);
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, AProgramKilledWithSigkillLeavesATraceThatLoadsUpToItsLastFlush) {
  const std::string trace = temp_path("killed_trace.json");
  Child child = spawn({self_path(), "--endless"}, {{"CUDASCOPE_BACKEND", "sim"},
                                                  {"CUDA_INJECTION64_PATH", CUDASCOPE_INJECT_LIBRARY_PATH},
                                                  {"NVTX_INJECTION64_PATH", CUDASCOPE_INJECT_LIBRARY_PATH},
                                                  {"CUDASCOPE_TRACE", trace}});
  // Wait until the streamed trace on disk holds a good number of kernels, then kill.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int on_disk = 0;
  while (on_disk < 100 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(trace);
    std::stringstream text;
    text << in.rdbuf();
    on_disk = 0;
    for (std::size_t at = 0; (at = text.str().find("\"cat\":\"kernel\"", at)) != std::string::npos; ++at) ++on_disk;
  }
  kill(child.pid, SIGKILL);
  const auto [code, output] = finish(child);
  EXPECT_EQ(code, 128 + SIGKILL);
  ASSERT_GE(on_disk, 100) << "the trace was streamed to disk while recording";
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.repaired);
  EXPECT_FALSE(read.trace.complete);
  EXPECT_GE(count_kernels(read.trace), on_disk);
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, CudascopeRunClosesTheTraceOfAChildKilledBySignal) {
  const std::string trace = temp_path("run_killed_trace.json");
  auto [code, output] = finish(spawn({CUDASCOPE_CLI, "run", "-o", trace, "--", self_path(), "--endless", "3000"},
                                     {{"CUDASCOPE_BACKEND", "sim"}}));
  EXPECT_EQ(code, 128 + SIGKILL);
  std::ifstream in(trace);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"truncated\":true}}"), std::string::npos) << "closed by cudascope run";
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  EXPECT_GT(count_kernels(read.trace), 0) << "3000 steps outlast several periodic flushes";
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, DelayAndDurationRecordAWindowOfTheRunAndCloseTheTraceAtItsEnd) {
  const std::string trace = temp_path("window_trace.json");
  // The window opens late and the program runs long enough (40,000 steps of >= 50 us) that a
  // slow start on a loaded machine still leaves kernels inside it and the window closes first.
  auto [code, output] = finish(spawn({CUDASCOPE_CLI, "run", "--delay", "0.5", "--duration", "0.4", "-o", trace, "--",
                                      self_path(), "--endless", "40000"},
                                     {{"CUDASCOPE_BACKEND", "sim"}}));
  EXPECT_EQ(code, 128 + SIGKILL);
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete) << "the window ended before the program was killed";
  std::int64_t first = INT64_MAX, last = 0;
  int kernels = 0;
  for (const auto& e : read.trace.events) {
    if (e.ph != "X" || e.cat != "kernel") continue;
    ++kernels;
    first = std::min(first, e.ts_ns);
    last = std::max(last, e.ts_ns);
  }
  EXPECT_GT(kernels, 0);
  EXPECT_LT(kernels, 40000) << "only the window is recorded";
  EXPECT_LE(last - first, 450000000) << "kernels span at most the 0.4 s window";
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, CudascopeTraceAloneRecordsAProgramUsingTheRuntimeFromInitToExit) {
  const std::string trace = temp_path("env_trace.json");
  auto [code, output] = finish(spawn({self_path(), "--workload"}, {{"CUDASCOPE_BACKEND", "sim"}, {"CUDASCOPE_TRACE", trace}}));
  EXPECT_EQ(code, 3);
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete) << "closed at exit";
  EXPECT_EQ(count_kernels(read.trace), kSteps);
  EXPECT_EQ(analysis::compute_stats(read.trace).ranges.size(), static_cast<std::size_t>(kSteps));
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, SigtermFinishesTheTraceBeforeTheProgramEnds) {
  const std::string trace = temp_path("sigterm_trace.json");
  Child child = spawn({self_path(), "--endless"}, {{"CUDASCOPE_BACKEND", "sim"}, {"CUDASCOPE_TRACE", trace}});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(trace);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("\"cat\":\"kernel\"") != std::string::npos) break;
  }
  kill(child.pid, SIGTERM);
  const auto [code, output] = finish(child);
  EXPECT_EQ(code, 128 + SIGTERM) << "the signal still ends the program";
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete) << "the trace was finished before the default action ran";
  EXPECT_FALSE(read.trace.repaired);
  EXPECT_GT(count_kernels(read.trace), 0);
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  std::filesystem::remove(trace);
}

TEST(TraceEndToEndTest, NvtxInjectionRecordsDomainsColoursPayloadsStartEndRangesMarksAndThreadNames) {
  const std::string trace = temp_path("nvtx_trace.json");
  auto [code, output] = finish(spawn({self_path(), "--nvtx-api"}, {{"CUDASCOPE_BACKEND", "sim"},
                                                                  {"NVTX_INJECTION64_PATH", CUDASCOPE_INJECT_LIBRARY_PATH},
                                                                  {"CUDASCOPE_TRACE", trace}}));
  ASSERT_EQ(code, 0);
  const auto read = analysis::read_trace(trace);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  std::map<std::string, const analysis::TraceEvent*> by_ph_name;
  for (const auto& e : read.trace.events) by_ph_name[e.ph + ":" + e.name] = &e;
  ASSERT_TRUE(by_ph_name.count("B:forward"));
  const std::string& args = by_ph_name["B:forward"]->args_json;
  EXPECT_NE(args.find("\"domain\":\"training\""), std::string::npos) << args;
  EXPECT_NE(args.find("\"category\":7"), std::string::npos) << args;
  EXPECT_NE(args.find("\"color\":\"#112233\""), std::string::npos) << args;
  EXPECT_NE(args.find("\"payload\":-42"), std::string::npos) << args;
  ASSERT_TRUE(by_ph_name.count("b:data loading"));
  ASSERT_TRUE(by_ph_name.count("e:data loading"));
  EXPECT_EQ(by_ph_name["b:data loading"]->id, by_ph_name["e:data loading"]->id);
  EXPECT_TRUE(by_ph_name.count("i:checkpoint"));
  EXPECT_TRUE(by_ph_name.count("E:forward"));
  bool named = false;
  for (const auto& e : read.trace.events) {
    named |= e.ph == "M" && e.name == "thread_name" && e.args_json.find("trainer") != std::string::npos;
  }
  EXPECT_TRUE(named) << "nvtxNameOsThreadA names the thread's track";
  std::filesystem::remove(trace);
}
