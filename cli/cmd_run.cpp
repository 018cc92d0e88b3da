// `cudascope run [-o trace.json] [--activities LIST] [--delay S] [--duration S] -- cmd args...`:
// records an unmodified program. The child gets libcudascope_inject.so through
// CUDA_INJECTION64_PATH (loaded by the driver, or by the sim backend of programs using the
// cudascope runtime) and NVTX_INJECTION64_PATH, and streams its trace to -o. Every process
// below it that uses CUDA records too (the variables are inherited): -o may be a pattern
// (%r rank, %p pid, %h host; exporters/trace_path.h) expanded in each process, and a fixed
// name gets ".<pid>" in any process but the first. A process that loads CUDA but never uses
// it (a launcher) writes no file (inject/lazy_trace_sink.h). Each process reports the file it
// writes on a pipe, so the wrapper can list them all at the end. The child's
// stdout/stderr are left alone; its exit status is passed through (128+N for signal N), except
// that a recording that failed (a full disk: the trace stops at its last flush, closed, and the
// program goes on; a trace nothing could be written to) makes a status of 0 into 1, the
// program's status being printed. A command line refused before the program starts is a
// usage error, 2 (command.h). The --help footer (kExitStatusHelp) says the same to users.
#include "checks.h"
#include "command.h"

#include <cudascope/analysis/trace_reader.h>
#include <cudascope/exporters/trace_path.h>
#include <cudascope/profiler/activities.h>
#include <cudascope/util/env_value.h>
#include <cudascope/util/library_path.h>

#include <fcntl.h>
#include <glob.h>
#include <netdb.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
#include <set>
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
  if (const std::string path = cudascope::util::env_text("CUDASCOPE_INJECT_LIBRARY").value_or(""); !path.empty()) return path;
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
  std::string window_dir;  // --no-trace: where trace windows go (default: -o's directory)
};
LiveMetricsOptions live_metrics;

void add_live_metrics_options(CLI::App* sub, LiveMetricsOptions& m) {
  sub->add_option("--metrics", m.bind,
                  "Serve the program's live metrics for Prometheus at http://ADDRESS:PORT/metrics while it runs "
                  "(e.g. 127.0.0.1:9401; port 0: each process picks a free one and prints its URL; 0.0.0.0:PORT exposes them)")
      ->check(cudascope::cli::ListenAddress());
  sub->add_option("--metrics-top", m.top, "Kernel and NVTX range names with series of their own; the rest are 'other'")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  sub->add_flag("--metrics-label-nvtx", m.label_nvtx,
                "Label kernel metrics with the innermost NVTX range they were launched in (records launch calls)");
  sub->add_flag("--no-trace", m.no_trace, "Metrics only: write no trace file (needs --metrics)");
  sub->add_option("--job", m.job, "A job label on every metric series");
  sub->add_option("--window-dir", m.window_dir,
                  "With --no-trace: the directory `cudascope trace --pid` windows are written into, under names the "
                  "program chooses (default: the directory of -o)");
}

// A random token for the job's trace windows (inject/trace_window.h): in the program's
// environment, which only its user (and root) can read, so only they can ask for a window.
// Also the random part of the run's id (CUDASCOPE_RUN_ID), which is no secret.
std::string random_token() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  std::string token;
  for (unsigned char b : bytes) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    token += hex;
  }
  return token;
}

// The directory of the job's trace windows, absolute, checked before the program starts.
std::string window_directory(const LiveMetricsOptions& m, const std::string& output) {
  const std::filesystem::path directory =
      m.window_dir.empty() ? std::filesystem::path(output).parent_path() : std::filesystem::absolute(m.window_dir);
  struct stat status {};
  if (stat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode)) {
    throw CLI::ValidationError("--window-dir '" + directory.string() + "': not a directory");
  }
  if (access(directory.c_str(), W_OK | X_OK) != 0) {
    throw CLI::ValidationError("--window-dir '" + directory.string() + "': cannot write there: " + std::strerror(errno));
  }
  return directory.string();
}

// Whether a socket binds to `host`:`port` as the program's server will; `why` when not. The
// socket is closed again at once.
bool can_listen(const std::string& host, const std::string& port, std::string& why) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    why = gai_strerror(rc);
    return false;
  }
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool bound = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  if (!bound) why = std::string("cannot listen there: ") + std::strerror(errno);
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return bound;
}

// Before any work, as usage errors (exit 2): --no-trace without --metrics would record into
// nothing, and the address must be one this machine can listen on now (the program serves
// it; a failure there would only be logged while the run goes on without metrics).
// With port 0 each process of the program binds a port of its own, says which on stderr, and
// `cudascope trace --pid` finds it among the ports the process listens on.
void check_live_metrics_options(const LiveMetricsOptions& m) {
  if (m.no_trace && m.bind.empty()) throw CLI::ValidationError("--no-trace needs --metrics ADDRESS:PORT (else nothing is recorded)");
  if (!m.window_dir.empty() && !m.no_trace) throw CLI::ValidationError("--window-dir needs --no-trace (windows are for metrics-only runs)");
  if (m.bind.empty()) return;
  const std::size_t colon = m.bind.rfind(':');
  const auto bad = [&](const std::string& why) {
    return CLI::ValidationError("--metrics '" + m.bind + "': " + why + " (expected ADDRESS:PORT, e.g. 127.0.0.1:9401)");
  };
  if (colon == std::string::npos || colon == 0) throw bad("no address or no port");
  std::string host = m.bind.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string why;
  if (!can_listen(host, m.bind.substr(colon + 1), why)) throw bad(why);
}

// In the child, before exec. `windows`: the token and directory of trace windows (--no-trace).
void export_live_metrics_environment(const LiveMetricsOptions& m, std::string activities,
                                     const std::pair<std::string, std::string>& windows) {
  if (m.bind.empty()) return;
  if (m.no_trace) {
    setenv("CUDASCOPE_TRACE_TOKEN", windows.first.c_str(), 1);
    setenv("CUDASCOPE_TRACE_WINDOW_DIR", windows.second.c_str(), 1);
  }
  setenv("CUDASCOPE_METRICS", m.bind.c_str(), 1);
  setenv("CUDASCOPE_METRICS_TOP", std::to_string(m.top).c_str(), 1);
  if (m.label_nvtx) {
    setenv("CUDASCOPE_METRICS_LABEL_NVTX", "1", 1);
    setenv("CUDASCOPE_ACTIVITIES", (activities + ",launch,nvtx").c_str(), 1);  // launches carry the range
  }
  if (m.no_trace) setenv("CUDASCOPE_NO_TRACE", "1", 1);
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

// Why -o cannot be written, or empty. A pattern is checked in its directory (as this process
// would expand it) with a file name of this process's own: the literal "trace_%r.json" would
// be shared by several `cudascope run` started at once (one per rank), each creating and
// removing it to test the directory.
std::string output_pattern_problem(const std::string& output) {
  using namespace cudascope::exporters;
  if (std::string problem = trace_path_pattern_problem(output); !problem.empty()) return problem;
  if (!is_trace_path_pattern(output)) return cudascope::cli::output_file_problem(output);
  const std::filesystem::path expanded(expand_trace_path(output, TracePathFields::of_this_process()));
  const std::filesystem::path directory = expanded.has_parent_path() ? expanded.parent_path() : ".";
  const std::string probe = (directory / (".cudascope-write-check." + std::to_string(getpid()))).string();
  if (std::string problem = cudascope::cli::output_file_problem(probe); !problem.empty()) {
    return "cannot write traces in " + directory.string() + " for the pattern '" + output + "': " + problem;
  }
  return {};
}

// Everything that would make the program run unrecorded is checked before it starts.
void check_before_starting(const RunOptions& options) {
  if (options.command.empty()) throw CLI::ValidationError("no command to run: cudascope run [options] -- cmd args...");
  // The flag's validator checked a given -o; this covers the default in the working directory.
  if (const std::string problem = output_pattern_problem(options.output); !problem.empty()) {
    throw CLI::ValidationError("--output", problem);
  }
  cudascope::cli::check_backend_variable();
  // What the program will read of ours, and run does not set itself (run_traced's child).
  try {
    cudascope::util::check_environment();
  } catch (const cudascope::util::EnvError& e) {
    throw std::runtime_error(e.what());
  }
  if (const std::string problem = program_problem(options.command.front()); !problem.empty()) {
    throw std::runtime_error(problem);
  }
}

// The progress channel's FIFO (inject/progress_channel.h), in a directory of its own under
// TMPDIR (mode 0700: only this user's processes can write to it), removed when run ends.
// Recorded processes open it by path, so workers started with their descriptors closed
// (torchrun's) report too. Run holds a write end itself: without one, reads would see end
// of file until the first process opens it, and again between processes. Where it cannot be
// made, run says so and goes on without it: the traces are still found and listed, without
// their counts (unreported_traces).
class ProgressFifo {
 public:
  ProgressFifo() {
    // Absolute: a process that changes directory before it opens the FIFO finds it all the same.
    const char* tmp = std::getenv("TMPDIR");
    std::error_code absolute_error;
    const std::filesystem::path base = std::filesystem::absolute(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", absolute_error);
    std::string dir = (absolute_error ? std::filesystem::path("/tmp") : base).string() + "/cudascope-run-XXXXXX";
    const char* failed = nullptr;
    if (mkdtemp(dir.data()) == nullptr) {
      failed = "mkdtemp";
    } else {
      dir_ = dir;
      path_ = dir_ + "/progress";
      if (mkfifo(path_.c_str(), 0600) != 0) {
        failed = "mkfifo";
      } else if ((read_fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
                 (keep_open_fd_ = open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        failed = "open";
      }
    }
    if (failed != nullptr) give_up(failed, path_.empty() ? dir : path_);
  }
  // Only in run itself: a forked child that never reached exec leaves the channel alone.
  ~ProgressFifo() {
    if (getpid() != owner_) return;
    unlink_name();
    close_ends();
  }
  ProgressFifo(const ProgressFifo&) = delete;
  ProgressFifo& operator=(const ProgressFifo&) = delete;
  // Empty where there is no channel.
  const std::string& path() const { return path_; }
  int read_fd() const { return read_fd_; }  // -1 where there is no channel
  // Removes the FIFO and its directory: no process opens it any more; those that have it open
  // still write to it until close_ends().
  void unlink_name() noexcept {
    if (!path_.empty()) unlink(path_.c_str());
    if (!dir_.empty()) rmdir(dir_.c_str());
    dir_.clear();
  }
  // Closes run's ends: lines written after fail with EPIPE (never a SIGPIPE, progress_channel.h).
  void close_ends() noexcept {
    for (int* fd : {&read_fd_, &keep_open_fd_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }

 private:
  void give_up(const char* call, const std::string& path) {
    const int error = errno;
    std::fprintf(stderr, "cudascope: %s %s: %s; recording without progress (traces are listed without counts; TMPDIR "
                 "names where the channel goes)\n", call, path.c_str(), std::strerror(error));
    unlink_name();
    close_ends();
    path_.clear();
  }
  const pid_t owner_ = getpid();
  std::string dir_, path_;
  int read_fd_ = -1, keep_open_fd_ = -1;
};

// A trace file some recorded process wrote, with that process's last counts.
struct TraceFile {
  long pid = 0;
  std::string path;
  unsigned long long events = 0, dropped = 0;
  std::string failure;  // why the process stopped writing it early (a full disk), or empty
  std::string summary;  // the rank summary the process wrote beside it at exit, or empty
};

// Reads the progress FIFO the recorded processes share (injection_agent.h): "trace PID PATH"
// when a process opens its trace, "EVENTS DROPPED PID" after each of its flushes,
// "failed PID PATH\tERROR" when it could not write on, and "summary PID PATH" when a rank
// wrote its summary beside its trace at exit. A terminal
// gets one updating line of the totals; a log gets a line every 10 s.
class Progress {
 public:
  explicit Progress(int fd) : fd_(fd), tty_(isatty(STDERR_FILENO) != 0), thread_([this] { loop(); }) {}
  // After the program ended: what is still in the pipe, then the files. Workers the program
  // left running may hold the pipe open, so this does not wait for its end.
  std::vector<TraceFile> finish() {
    done_ = true;
    thread_.join();
    if (tty_ && printed_) std::fputc('\n', stderr);
    std::lock_guard lock(mutex_);
    std::vector<TraceFile> files;
    for (const auto& [pid, path] : paths_) {
      const auto counts = counts_.find(pid);
      const auto failure = failures_.find(pid);
      const auto summary = summaries_.find(pid);
      files.push_back({pid, path, counts == counts_.end() ? 0 : counts->second.first,
                       counts == counts_.end() ? 0 : counts->second.second,
                       failure == failures_.end() ? "" : failure->second,
                       summary == summaries_.end() ? "" : summary->second});
      if (failure != failures_.end()) failures_.erase(failure);
    }
    for (const auto& [pid, error] : failures_) files.push_back({pid, "", 0, 0, error, ""});  // failed before reporting a file
    return files;
  }

 private:
  void loop() {
    std::string pending;
    char chunk[4096];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = poll(&p, 1, done_.load() ? 0 : 200);  // once done, only what is there now
      if (ready == 0 && done_.load()) break;
      if (ready <= 0) continue;
      const ssize_t n = read(fd_, chunk, sizeof chunk);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) break;
      pending.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
        line(pending.substr(0, eol));
      }
    }
  }

  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    long pid = 0;
    int path_at = 0;
    if (std::sscanf(text.c_str(), "trace %ld %n", &pid, &path_at) == 1 && path_at > 0) {
      paths_[pid] = text.substr(static_cast<std::size_t>(path_at));
      return;
    }
    if (std::sscanf(text.c_str(), "summary %ld %n", &pid, &path_at) == 1 && path_at > 0) {
      summaries_[pid] = text.substr(static_cast<std::size_t>(path_at));
      return;
    }
    if (std::sscanf(text.c_str(), "failed %ld %n", &pid, &path_at) == 1 && path_at > 0) {
      const std::size_t tab = text.find('\t', static_cast<std::size_t>(path_at));
      failures_[pid] = tab == std::string::npos ? "write error" : text.substr(tab + 1);
      if (tty_ && printed_) std::fputc('\n', stderr);
      printed_ = false;
      return;
    }
    unsigned long long e = 0, d = 0;
    const int fields = std::sscanf(text.c_str(), "%llu %llu %ld", &e, &d, &pid);
    if (fields < 2) return;
    counts_[fields == 3 ? pid : 0] = {e, d};
    unsigned long long events = 0, dropped = 0;
    for (const auto& [owner, c] : counts_) {
      events += c.first;
      dropped += c.second;
    }
    const auto now = std::chrono::steady_clock::now();
    const std::string processes = counts_.size() > 1 ? " in " + std::to_string(counts_.size()) + " processes" : "";
    if (tty_) {
      std::fprintf(stderr, "\rcudascope: recording, %llu events, %llu dropped%s ", events, dropped, processes.c_str());
      printed_ = true;
    } else if (now - last_line_ >= std::chrono::seconds(10)) {
      std::fprintf(stderr, "cudascope: recording, %llu events, %llu dropped%s\n", events, dropped, processes.c_str());
      last_line_ = now;
    }
  }

  int fd_;
  bool tty_;
  bool printed_ = false;
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::map<long, std::string> paths_;                                      // pid -> trace file
  std::map<long, std::string> failures_;                                   // pid -> why it stopped writing
  std::map<long, std::string> summaries_;                                  // pid -> rank summary at exit
  std::map<long, std::pair<unsigned long long, unsigned long long>> counts_;  // pid -> events, dropped
  std::chrono::steady_clock::time_point last_line_ = std::chrono::steady_clock::now();
  std::thread thread_;  // last: starts once the members above exist
};

// Traces of this run that no process reported: a process that cannot open the progress FIFO
// (its environment scrubbed, another mount namespace) does not report, and since a
// launcher that uses no CUDA writes nothing, the run may have no reported file at all. These
// are the files `output` names in any process (its directives, and the ".<pid>" a taken name
// gets) that were written since `since` (CLOCK_REALTIME_COARSE, the clock of file times),
// but those whose header names another run than `run_id` (CUDASCOPE_RUN_ID).
std::vector<TraceFile> unreported_traces(const std::string& output, const timespec& since, const std::string& run_id,
                                         const std::vector<TraceFile>& reported) {
  // The glob and the regular expression `output` stands for, in two parts around the place
  // exporters::with_pid_suffix puts ".<pid>".
  const auto translate = [](const std::string& part, std::string& glob_text, std::string& regex_text) {
    for (std::size_t i = 0; i < part.size(); ++i) {
      const char c = part[i];
      if (c == '%' && i + 1 < part.size()) {
        const char d = part[++i];
        if (d == 'r' || d == 'h') {
          glob_text += '*';
          regex_text += "[^/]*";
          continue;
        }
        if (d == 'p') {
          glob_text += '*';
          regex_text += "[0-9]+";
          continue;
        }
        if (d != '%') --i;  // not a directive: the '%' itself
      }
      const char literal = part[i];
      if (std::strchr("*?[]\\", literal) != nullptr) glob_text += '\\';
      glob_text += literal;
      if (std::strchr(".^$|()[]{}*+?\\", literal) != nullptr) regex_text += '\\';
      regex_text += literal;
    }
  };
  const std::size_t slash = output.rfind('/');
  std::size_t dot = output.rfind(".json");
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = output.size();
  std::string head_glob, head_regex, tail_glob, tail_regex;
  translate(output.substr(0, dot), head_glob, head_regex);
  translate(output.substr(dot), tail_glob, tail_regex);
  const std::regex name(head_regex + "(\\.[0-9]+)?" + tail_regex);
  std::set<std::string> known;
  for (const TraceFile& file : reported) known.insert(file.path);
  std::set<std::string> found;
  for (const std::string& pattern : {head_glob + tail_glob, head_glob + ".*" + tail_glob}) {
    glob_t matches{};
    if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
      for (std::size_t i = 0; i < matches.gl_pathc; ++i) found.insert(matches.gl_pathv[i]);
    }
    globfree(&matches);
  }
  std::vector<TraceFile> files;
  for (const std::string& path : found) {
    struct stat status {};
    if (known.count(path) != 0 || !std::regex_match(path, name) || stat(path.c_str(), &status) != 0 ||
        !S_ISREG(status.st_mode)) {
      continue;
    }
    const timespec& m = status.st_mtim;
    if (m.tv_sec < since.tv_sec || (m.tv_sec == since.tv_sec && m.tv_nsec < since.tv_nsec)) continue;
    // Another run's (one run per rank, all given one pattern): its header names that run.
    const std::optional<std::string> run = cudascope::exporters::trace_file_run_id(path);
    if (run && *run != run_id) continue;
    files.push_back({0, path, 0, 0});
  }
  return files;
}

// Whether a live process still holds the claim on `path` (exporters::claim_trace_path): a
// worker the program left running is still writing it.
bool being_written(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;  // a lock taken here ends with close
  close(fd);
  return held;
}

// A program ended by a signal is said to be, by name: its exit code alone (128 + the signal)
// is easily read as the program's own, and a crash must not pass for one.
void report_signal(int status, bool no_trace) {
  if (!WIFSIGNALED(status)) return;
  const int signal_number = WTERMSIG(status);
  const char* name = strsignal(signal_number);
  std::fprintf(stderr, "cudascope: the program ended by signal %d (%s)%s\n", signal_number, name != nullptr ? name : "?",
               no_trace ? "" : "; the trace holds what it recorded up to its last flush");
}

// Why no process wrote a trace. Each process's --delay counts from its own start of CUDA or
// NVTX, so a program that ended sooner than the delay certainly recorded nothing.
std::string why_no_trace(double delay, double program_seconds) {
  char text[200];
  if (delay > 0 && program_seconds < delay) {
    std::snprintf(text, sizeof text, "the program ended after %.3g s, before the --delay of %g s had passed, so nothing "
                  "was recorded", program_seconds, delay);
  } else if (delay > 0) {
    std::snprintf(text, sizeof text, "no process of the program used CUDA or NVTX once its --delay of %g s had passed "
                  "(counted from its first use of them)", delay);
  } else {
    std::snprintf(text, sizeof text, "no process of the program used CUDA or NVTX");
  }
  return text;
}

// A trace its process reported that holds nothing: the process died between opening it and
// writing its header (ChromeTraceWriter::begin writes it at once). A trace that could not be
// written reports itself with a "failed" line; this is the backstop for what cannot report.
// Marked failed here, so the run does not pass for a recorded one.
void mark_unwritten_traces(std::vector<TraceFile>& files) {
  for (TraceFile& file : files) {
    struct stat status {};
    if (file.pid == 0 || file.path.empty() || !file.failure.empty() || stat(file.path.c_str(), &status) != 0) continue;
    if (S_ISREG(status.st_mode) && status.st_size > 0) continue;
    file.failure = "nothing could be written to " + file.path;
    file.path.clear();  // no trace to list
  }
}

// A fixed -o name belongs to the process run started; a process it started in turn (a shell
// running the program, a launcher) writes "NAME.<pid>.json" beside it. When that is the only
// trace and the name itself was never written, the trace takes the name asked for.
void name_the_only_trace(std::vector<TraceFile>& files, const std::string& output) {
  if (files.size() != 1 || cudascope::exporters::is_trace_path_pattern(output)) return;
  TraceFile& file = files.front();
  if (file.pid == 0 || !file.failure.empty() || !file.summary.empty() || being_written(file.path)) return;
  if (file.path != cudascope::exporters::with_pid_suffix(output, std::to_string(file.pid))) return;
  struct stat status {};
  if (lstat(output.c_str(), &status) == 0) return;  // something else holds the name: left alone
  if (std::rename(file.path.c_str(), output.c_str()) == 0) file.path = output;
}

// The end of a run: each trace written, closed if the program was killed before it could.
void report_traces(std::vector<TraceFile> files, const std::string& output, int status, const std::string& why_none) {
  if (files.empty()) {
    std::fprintf(stderr, "cudascope: no trace written to %s (%s)\n", output.c_str(), why_none.c_str());
    return;
  }
  for (const TraceFile& file : files) {
    if (!WIFSIGNALED(status)) continue;
    if (being_written(file.path)) continue;  // its process lives on and will close it
    // Killed before it could close its trace: keep what it flushed, closed so it loads.
    const std::string problem = cudascope::analysis::repair_trace_file(file.path);
    if (!problem.empty()) std::fprintf(stderr, "cudascope: closing the cut-short trace: %s\n", problem.c_str());
  }
  for (const TraceFile& file : files) {
    if (!file.failure.empty()) {
      std::fprintf(stderr, "cudascope: recording of process %ld stopped early: %s\n", file.pid, file.failure.c_str());
      if (file.path.empty()) continue;
    }
    if (file.pid == 0) {
      std::fprintf(stderr, "cudascope: trace %s (its process could not report to cudascope run: no counts)\n", file.path.c_str());
      continue;
    }
    const std::string who = files.size() > 1 ? " of process " + std::to_string(file.pid) : "";
    if (!file.failure.empty()) {
      std::fprintf(stderr, "cudascope: trace%s %s (cut short where writing failed: it holds the events written before)\n",
                   who.c_str(), file.path.c_str());
      continue;
    }
    std::fprintf(stderr, "cudascope: trace%s %s (%llu events, %llu dropped records)\n", who.c_str(), file.path.c_str(),
                 file.events, file.dropped);
    if (!file.summary.empty()) std::fprintf(stderr, "cudascope: rank summary %s\n", file.summary.c_str());
  }
}

// What `run --help` says of its exit status (the header comment of this file says why).
constexpr const char* kExitStatusHelp =
    "Exit status: the program's own (128+N when signal N ended it); 1 when the program exited 0 but a trace could "
    "not be written (its status is printed), or when it could not be started; 2 when run refuses the command line "
    "before starting the program (a bad flag or value).";

// A CLI11 validator for --activities: empty when ActivitySet can parse the list.
std::string activities_problem(std::string& list) {
  try {
    cudascope::profiler::ActivitySet::parse(list);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return {};
}

int run_traced(const RunOptions& options) {
  check_before_starting(options);
  check_live_metrics_options(live_metrics);
  const std::string library = find_injection_library();
  const std::string output = std::filesystem::absolute(options.output).string();
  std::pair<std::string, std::string> windows;  // token, directory
  if (live_metrics.no_trace) windows = {random_token(), window_directory(live_metrics, output)};
  const std::string run_id = std::to_string(getpid()) + "-" + random_token();
  timespec started{};
  clock_gettime(CLOCK_REALTIME_COARSE, &started);

  ProgressFifo progress;
  const auto forked = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
    setenv("CUDASCOPE_TRACE", output.c_str(), 1);
    setenv("CUDASCOPE_TRACE_PID", std::to_string(getpid()).c_str(), 1);
    setenv("CUDASCOPE_RUN_ID", run_id.c_str(), 1);
    setenv("CUDASCOPE_ACTIVITIES", options.activities.c_str(), 1);
    // The variables run sets are run's: an inherited value (CUDASCOPE_NO_TRACE=x in the
    // shell) must not change what this run records.
    for (const char* owned : {"CUDASCOPE_DELAY", "CUDASCOPE_DURATION", "CUDASCOPE_CUPTI_BUFFER", "CUDASCOPE_NO_TRACE",
                              "CUDASCOPE_TRACE_TOKEN", "CUDASCOPE_TRACE_WINDOW_DIR", "CUDASCOPE_PROGRESS"}) {
      unsetenv(owned);
    }
    if (!progress.path().empty()) setenv("CUDASCOPE_PROGRESS", progress.path().c_str(), 1);
    if (options.delay > 0) setenv("CUDASCOPE_DELAY", std::to_string(options.delay).c_str(), 1);
    if (options.duration > 0) setenv("CUDASCOPE_DURATION", std::to_string(options.duration).c_str(), 1);
    if (options.cupti_buffer > 0) setenv("CUDASCOPE_CUPTI_BUFFER", std::to_string(options.cupti_buffer).c_str(), 1);
    export_live_metrics_environment(live_metrics, options.activities, windows);
    std::vector<char*> argv;
    for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cudascope run: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  child_pid = pid;
  // The terminal's Ctrl-C reaches the child directly; the wrapper waits for it to finish.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, &forward_signal);

  Progress progress_lines(progress.read_fd());
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const double program_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - forked).count();
  // The name first: a process that opens the channel now fails at once (no counts) rather
  // than writing into a FIFO nobody reads again.
  progress.unlink_name();
  std::vector<TraceFile> files = progress_lines.finish();
  progress.close_ends();

  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  report_signal(status, live_metrics.no_trace);
  if (!live_metrics.no_trace) {
    for (TraceFile& file : unreported_traces(output, started, run_id, files)) files.push_back(std::move(file));
    mark_unwritten_traces(files);
    name_the_only_trace(files, output);
  }
  const bool failed = std::any_of(files.begin(), files.end(), [](const TraceFile& f) { return !f.failure.empty(); });
  if (!live_metrics.no_trace) {
    report_traces(files, output, status, why_no_trace(options.delay, program_seconds));
  } else {
    for (const TraceFile& file : files) {
      if (!file.failure.empty()) std::fprintf(stderr, "cudascope: process %ld: %s\n", file.pid, file.failure.c_str());
    }
  }
  if (!failed) return exit_code;
  // The program's status is still told; run's own says the recording failed.
  std::fprintf(stderr, "cudascope: the program %s %d; recording failed, so run exits with %d\n",
               WIFEXITED(status) ? "exited with status" : "ended by signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
               exit_code != 0 ? exit_code : 1);
  return exit_code != 0 ? exit_code : 1;
}

}  // namespace

CUDASCOPE_COMMAND(run, 30) {
  static RunOptions options;
  CLI::App* sub = app.add_subcommand("run", "Record a program's CUDA activity and NVTX ranges into a Chrome trace");
  using cudascope::cli::FiniteRange;
  constexpr double kWeek = 7 * 24 * 3600;
  sub->add_option("-o,--output", options.output,
                  "Trace file (.json or .json.gz); a pattern gives each process its own: %r rank (RANK; 'norank' "
                  "when unset), %p pid, %h host, %% a '%' (e.g. trace_%r.json.gz under torchrun)")
      ->check(CLI::Validator([](std::string& path) { return output_pattern_problem(path); }, "FILE (writable)", "TRACE_PATH"))
      ->capture_default_str();
  sub->add_option("--activities", options.activities,
                  "Comma-separated: kernel,memcpy,memset,sync,launch,runtime,driver,nvtx,allocator,overhead,all,default "
                  "(default leaves out sync, runtime and driver, and with --no-trace launch too: name them to record them)")
      ->check(CLI::Validator(activities_problem, "LIST", "ACTIVITIES"));
  sub->add_option("--delay", options.delay, "Start recording after this many seconds")->check(FiniteRange(0, kWeek, "s"));
  sub->add_option("--duration", options.duration, "Stop recording after this many seconds (0: until the end)")
      ->check(FiniteRange(0, kWeek, "s"));
  sub->add_option("--cupti-buffer", options.cupti_buffer, "Bytes per CUPTI activity buffer (default 8 MiB)")
      ->check(FiniteRange(4096, 1 << 30, "bytes"));
  add_live_metrics_options(sub, live_metrics);
  sub->add_option("command", options.command, "The program and its arguments (after --)")->required();
  sub->footer(kExitStatusHelp);
  sub->callback([] { cudascope::cli::set_exit_code(run_traced(options)); });
}
