// `cudascope run [-o trace.json] [--activities LIST] [--delay S] [--duration S] -- cmd args...`:
// records an unmodified program. The child gets libcudascope_inject.so through
// CUDA_INJECTION64_PATH (loaded by the driver, or by the sim backend of programs using the
// cudascope runtime) and NVTX_INJECTION64_PATH, and streams its trace to -o. The child's
// stdout/stderr are left alone; its exit status is passed through (128+N for signal N).
#include "checks.h"
#include "command.h"

#include <cudascope/analysis/trace_reader.h>
#include <cudascope/profiler/activities.h>
#include <cudascope/util/library_path.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct RunOptions {
  std::string output = "trace.json";
  std::string activities = "default";
  double delay = 0;
  double duration = 0;
  std::size_t cupti_buffer = 0;
  std::vector<std::string> command;
};

// libcudascope_inject.so: CUDASCOPE_INJECT_LIBRARY, else ../lib beside this executable
// (installed bin/ and lib/, and the build tree's cli/ and lib/).
std::string find_injection_library() {
  if (const char* path = std::getenv("CUDASCOPE_INJECT_LIBRARY"); path != nullptr && *path != '\0') return path;
  // Beside the runtime library this command is linked with: the build tree's lib/, an
  // installed prefix's lib/ or its multiarch lib/<triplet>/ alike.
  const std::string found = cudascope::util::library_beside_runtime("libcudascope_inject.so");
  if (!found.empty()) return std::filesystem::canonical(found).string();
  throw std::runtime_error("libcudascope_inject.so not found beside the runtime library in '" +
                           cudascope::util::runtime_library_directory() + "' (set CUDASCOPE_INJECT_LIBRARY to its path)");
}

// --- Live metrics (--metrics, --metrics-top, --metrics-label-nvtx, --job, --no-trace) ---
// Passed to the injection library through its environment (inject/live_metrics.h).
struct LiveMetricsOptions {
  std::string bind;  // empty: no metrics
  std::size_t top = 20;
  bool label_nvtx = false;
  bool no_trace = false;
  std::string job;
};
LiveMetricsOptions live_metrics;

void add_live_metrics_options(CLI::App* sub, LiveMetricsOptions& m) {
  sub->add_option("--metrics", m.bind,
                  "Serve the program's live metrics for Prometheus at http://ADDRESS:PORT/metrics while it runs "
                  "(e.g. 127.0.0.1:9401; 0.0.0.0:PORT exposes them)");
  sub->add_option("--metrics-top", m.top, "Kernel and NVTX range names with series of their own; the rest are 'other'")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  sub->add_flag("--metrics-label-nvtx", m.label_nvtx,
                "Label kernel metrics with the innermost NVTX range they were launched in (records launch calls)");
  sub->add_flag("--no-trace", m.no_trace, "Metrics only: write no trace file (needs --metrics)");
  sub->add_option("--job", m.job, "A job label on every metric series");
}

// Before any work: --no-trace without --metrics would record into nothing, and the address
// must be one this machine can listen on now (the program serves it; a failure there would
// only be logged while the run goes on without metrics).
void check_live_metrics_options(const LiveMetricsOptions& m) {
  if (m.no_trace && m.bind.empty()) throw std::runtime_error("--no-trace needs --metrics ADDRESS:PORT (else nothing is recorded)");
  if (m.bind.empty()) return;
  const std::size_t colon = m.bind.rfind(':');
  const auto bad = [&](const std::string& why) {
    return std::runtime_error("--metrics '" + m.bind + "': " + why + " (expected ADDRESS:PORT, e.g. 127.0.0.1:9401)");
  };
  if (colon == std::string::npos || colon == 0) throw bad("no address or no port");
  std::string host = m.bind.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), m.bind.c_str() + colon + 1, &hints, &found); rc != 0) throw bad(gai_strerror(rc));
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool free = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  const std::string why = free ? "" : std::strerror(errno);
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!free) throw bad("cannot listen there: " + why);
}

// In the child, before exec.
void export_live_metrics_environment(const LiveMetricsOptions& m, std::string activities) {
  if (m.bind.empty()) return;
  setenv("CUDASCOPE_METRICS", m.bind.c_str(), 1);
  setenv("CUDASCOPE_METRICS_TOP", std::to_string(m.top).c_str(), 1);
  if (m.label_nvtx) {
    setenv("CUDASCOPE_METRICS_LABEL_NVTX", "1", 1);
    setenv("CUDASCOPE_ACTIVITIES", (activities + ",launch,nvtx").c_str(), 1);  // launches carry the range
  }
  if (m.no_trace) setenv("CUDASCOPE_NO_TRACE", "1", 1);
  if (m.no_trace && !m.label_nvtx && activities == "default") {
    // Launch records carry only what a trace draws (flows) and the NVTX label: metrics
    // alone do without them, one CUPTI record less per kernel launch.
    const auto set = cudascope::profiler::ActivitySet::defaults().remove(cudascope::profiler::Activity::kLaunch);
    setenv("CUDASCOPE_ACTIVITIES", set.to_string().c_str(), 1);
  }
  if (!m.job.empty()) setenv("CUDASCOPE_JOB", m.job.c_str(), 1);
}
// --- end of live metrics ---

volatile sig_atomic_t child_pid = 0;
void forward_signal(int signal_number) {
  if (child_pid > 0) kill(child_pid, signal_number);
}

// Why `program` cannot be started as execvp would look it up, or empty when it can.
std::string program_problem(const std::string& program) {
  auto runnable = [](const std::string& path) {
    return access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
  };
  if (program.find('/') != std::string::npos) {
    if (runnable(program)) return {};
    return "cannot run '" + program + "': " + (access(program.c_str(), F_OK) == 0 ? "not an executable file" : "no such file");
  }
  const char* path = std::getenv("PATH");
  std::string directories = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t start = 0; start <= directories.size();) {
    const std::size_t end = std::min(directories.find(':', start), directories.size());
    const std::string directory = end > start ? directories.substr(start, end - start) : ".";
    if (runnable(directory + "/" + program)) return {};
    start = end + 1;
  }
  return "cannot run '" + program + "': not found on PATH";
}

// Everything that would make the program run unrecorded is checked before it starts.
void check_before_starting(const RunOptions& options) {
  if (options.command.empty()) throw std::runtime_error("no command to run: cudascope run [options] -- cmd args...");
  try {
    cudascope::profiler::ActivitySet::parse(options.activities);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("--activities: ") + e.what());
  }
  // The flag's validator checked a given -o; this covers the default in the working directory.
  if (const std::string problem = cudascope::cli::output_file_problem(options.output); !problem.empty()) {
    throw std::runtime_error("--output: " + problem);
  }
  cudascope::cli::check_backend_variable();
  if (const std::string problem = program_problem(options.command.front()); !problem.empty()) {
    throw std::runtime_error(problem);
  }
}

int run_traced(const RunOptions& options) {
  check_before_starting(options);
  check_live_metrics_options(live_metrics);
  const std::string library = find_injection_library();
  const std::string output = std::filesystem::absolute(options.output).string();

  int progress[2];
  if (pipe(progress) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(progress[0]);
    setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
    setenv("CUDASCOPE_TRACE", output.c_str(), 1);
    setenv("CUDASCOPE_TRACE_PID", std::to_string(getpid()).c_str(), 1);
    setenv("CUDASCOPE_ACTIVITIES", options.activities.c_str(), 1);
    setenv("CUDASCOPE_PROGRESS_FD", std::to_string(progress[1]).c_str(), 1);
    if (options.delay > 0) setenv("CUDASCOPE_DELAY", std::to_string(options.delay).c_str(), 1);
    if (options.duration > 0) setenv("CUDASCOPE_DURATION", std::to_string(options.duration).c_str(), 1);
    if (options.cupti_buffer > 0) setenv("CUDASCOPE_CUPTI_BUFFER", std::to_string(options.cupti_buffer).c_str(), 1);
    export_live_metrics_environment(live_metrics, options.activities);
    std::vector<char*> argv;
    for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cudascope run: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(progress[1]);
  child_pid = pid;
  // The terminal's Ctrl-C reaches the child directly; the wrapper waits for it to finish.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, &forward_signal);

  std::atomic<bool> done{false};
  std::atomic<unsigned long long> events{0}, dropped{0};
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::thread reader([&] {
    std::string pending;
    char chunk[256];
    auto last_line = std::chrono::steady_clock::now();
    while (!done.load()) {
      pollfd fd{progress[0], POLLIN, 0};
      if (poll(&fd, 1, 200) <= 0) continue;
      const ssize_t n = read(progress[0], chunk, sizeof chunk);
      if (n <= 0) break;
      pending.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
        unsigned long long e = 0, d = 0;
        if (std::sscanf(pending.c_str(), "%llu %llu", &e, &d) == 2) {
          events = e;
          dropped = d;
          // A terminal gets one updating line; a log gets a line every 10 s.
          const auto now = std::chrono::steady_clock::now();
          if (tty) {
            std::fprintf(stderr, "\rcudascope: recording, %llu events, %llu dropped ", e, d);
          } else if (now - last_line >= std::chrono::seconds(10)) {
            std::fprintf(stderr, "cudascope: recording, %llu events, %llu dropped\n", e, d);
            last_line = now;
          }
        }
      }
    }
  });
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  done = true;
  reader.join();
  close(progress[0]);
  if (tty) std::fputc('\n', stderr);

  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (live_metrics.no_trace) return exit_code;
  if (!std::filesystem::exists(output)) {
    std::fprintf(stderr, "cudascope: no trace written to %s (the program never used CUDA or NVTX)\n", output.c_str());
    return exit_code;
  }
  if (WIFSIGNALED(status)) {
    // Killed before it could close its trace: keep what it flushed, closed so it loads.
    const std::string problem = cudascope::analysis::repair_trace_file(output);
    if (!problem.empty()) std::fprintf(stderr, "cudascope: closing the cut-short trace: %s\n", problem.c_str());
    std::fprintf(stderr, "cudascope: the program ended by signal %d; the trace holds what it recorded up to its last flush\n",
                 WTERMSIG(status));
  }
  std::fprintf(stderr, "cudascope: trace %s (%llu events, %llu dropped records)\n", output.c_str(), events.load(), dropped.load());
  return exit_code;
}

}  // namespace

CUDASCOPE_COMMAND(run, 30) {
  static RunOptions options;
  CLI::App* sub = app.add_subcommand("run", "Record a program's CUDA activity and NVTX ranges into a Chrome trace");
  using cudascope::cli::FiniteRange;
  constexpr double kWeek = 7 * 24 * 3600;
  sub->add_option("-o,--output", options.output, "Trace file (.json or .json.gz)")
      ->check(cudascope::cli::WritableFile())
      ->capture_default_str();
  sub->add_option("--activities", options.activities,
                  "Comma-separated: kernel,memcpy,memset,sync,runtime,driver,nvtx,allocator,overhead,all,default");
  sub->add_option("--delay", options.delay, "Start recording after this many seconds")->check(FiniteRange(0, kWeek, "s"));
  sub->add_option("--duration", options.duration, "Stop recording after this many seconds (0: until the end)")
      ->check(FiniteRange(0, kWeek, "s"));
  sub->add_option("--cupti-buffer", options.cupti_buffer, "Bytes per CUPTI activity buffer (default 8 MiB)")
      ->check(FiniteRange(4096, 1 << 30, "bytes"));
  add_live_metrics_options(sub, live_metrics);
  sub->add_option("command", options.command, "The program and its arguments (after --)")->required();
  sub->callback([] { cudascope::cli::set_exit_code(run_traced(options)); });
}
