#include "injection_agent.h"
#include "exit_summary.h"
#include "guarded_sink.h"
#include "lazy_trace_sink.h"
#include "live_metrics.h"
#include "progress_channel.h"
#include "recording_mode.h"

#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/exporters/trace_path.h>
#include <cudascope/util/env_value.h>

#include <sys/stat.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

namespace cudascope::inject {
namespace {

// CUDASCOPE_DELAY and CUDASCOPE_DURATION: at most a week, as `cudascope run` takes them.
constexpr double kMaxSeconds = 7 * 24 * 3600;

// Whether `path` was modified at or after `since` (CLOCK_REALTIME_COARSE, the clock file
// times are taken from).
bool written_since(const std::string& path, const timespec& since) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0) return false;
  const timespec& m = status.st_mtim;
  return m.tv_sec > since.tv_sec || (m.tv_sec == since.tv_sec && m.tv_nsec >= since.tv_nsec);
}

// CUDASCOPE_TRACE expanded for this process (exporters/trace_path.h): a pattern gives each
// rank and worker its own file; a name another live process writes gets ".<pid>".
// The name is chosen when the process first uses CUDA, not when it began recording
// (`recording_since`), so another process of the name that was alive then may have written
// its trace and ended since, releasing its claim: its file, written since, is treated as
// claimed too (rather than overwritten), as the claim taken at the start used to.
std::string trace_path(const timespec& recording_since) {
  const std::string text = util::env_text("CUDASCOPE_TRACE").value_or("");
  const std::string pattern = !text.empty() ? text : "cudascope-%p.json";
  std::string owner;
  try {
    if (const auto pid = util::env_count("CUDASCOPE_TRACE_PID", 1, INT32_MAX)) owner = std::to_string(*pid);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; ignored\n", e.what());
  }
  const exporters::TracePathFields fields = exporters::TracePathFields::of_this_process();
  const std::string expanded = exporters::expand_trace_path(pattern, fields);
  if (written_since(expanded, recording_since)) {
    const std::string own = exporters::with_pid_suffix(expanded, fields.pid);
    exporters::claim_trace_path(own);
    return own;
  }
  return exporters::choose_trace_path(pattern, owner, fields);
}

// SIGINT / SIGTERM with the default action (terminate): finish the trace first. The handler
// only writes to a pipe; a watcher thread does the work, then re-raises with the default.
int signal_pipe[2] = {-1, -1};

void on_signal(int signal_number) {
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const ssize_t n = write(signal_pipe[1], &byte, 1);
}

void watch_signals() {
  unsigned char byte = 0;
  while (read(signal_pipe[0], &byte, 1) == 1) {
    InjectionAgent::instance().finish();
    signal(byte, SIG_DFL);
    raise(byte);
  }
}

}  // namespace

InjectionAgent& InjectionAgent::instance() {
  static auto* agent = new InjectionAgent();
  return *agent;
}

void InjectionAgent::install_exit_handlers() noexcept {
  std::atexit([] { InjectionAgent::instance().finish(); });
  pthread_atfork(nullptr, nullptr, [] {
    InjectionAgent::instance().forked_child_.store(true);
    profiler::Session::detach_after_fork();
  });
  if (pipe(signal_pipe) != 0) return;
  bool any = false;
  for (int s : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (sigaction(s, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;  // the program handles it
    struct sigaction ours {};
    ours.sa_handler = &on_signal;
    sigemptyset(&ours.sa_mask);
    sigaction(s, &ours, nullptr);
    any = true;
  }
  if (any) std::thread(&watch_signals).detach();
}

void InjectionAgent::ensure_started() noexcept {
  std::lock_guard lock(mutex_);
  if (configured_) return;
  configured_ = true;
  double delay = 0, duration = 0;
  try {
    // A value that cannot be used refuses the recording (rather than record what was not
    // asked for: CUDASCOPE_DELAY=inf never records), named on stderr.
    options_.activities = activities_from_environment();
    if (const auto bytes = util::env_count("CUDASCOPE_CUPTI_BUFFER", 4096, 1u << 30)) options_.cupti_buffer_bytes = *bytes;
    delay = util::env_seconds("CUDASCOPE_DELAY", kMaxSeconds).value_or(0);
    duration = util::env_seconds("CUDASCOPE_DURATION", kMaxSeconds).value_or(0);
    metrics_wanted_ = !util::env_text("CUDASCOPE_METRICS").value_or("").empty();
    progress_fd_ = open_progress_channel();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: not recording: %s\n", e.what());
    finished_ = true;
    return;
  }
  options_.source = source_;
  if (progress_fd_ >= 0) {
    // On the writer thread, as the trace's own calls: a process whose trace is not open (it
    // has not used CUDA) is not counted among the recording processes.
    options_.on_flush = [this, fd = progress_fd_](const profiler::SessionStats& stats) {
      if (lazy_trace_ != nullptr && !lazy_trace_->opened()) return;
      char line[96];
      const int n = std::snprintf(line, sizeof line, "%llu %llu %ld\n", static_cast<unsigned long long>(stats.events),
                                  static_cast<unsigned long long>(stats.dropped_buffer + stats.dropped_cupti),
                                  static_cast<long>(getpid()));
      write_progress_line(fd, std::string_view(line, static_cast<std::size_t>(n)));
    };
  }
  install_exit_handlers();
  if (delay > 0) {
    std::thread([delay] {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay));
      InjectionAgent& agent = InjectionAgent::instance();
      std::lock_guard lock(agent.mutex_);
      agent.start_locked();
    }).detach();
  } else {
    start_locked();
  }
  if (duration > 0) {
    std::thread([delay, duration] {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay + duration));
      InjectionAgent::instance().finish();
    }).detach();
  }
}

void InjectionAgent::start_locked() noexcept {
  if (finished_ || session_) return;
  try {
    // The file is named (and the name claimed) only once the process uses CUDA or NVTX
    // (lazy_trace_sink.h): a launcher, a delayed or a metrics-only recording leaves none.
    std::unique_ptr<LazyTraceSink> trace;
    if (trace_wanted()) {
      timespec since{};
      clock_gettime(CLOCK_REALTIME_COARSE, &since);
      trace = std::make_unique<LazyTraceSink>([this, since] {
        std::string path = trace_path(since);
        auto file = exporters::open_chrome_trace(path);
        write_progress_line(progress_fd_, "trace " + std::to_string(getpid()) + " " + path + "\n");
        std::lock_guard path_lock(path_mutex_);
        path_ = std::move(path);
        return file;
      });
      lazy_trace_ = trace.get();
    }
    const auto on_failure = [this](const std::string& error) { trace_failed(error); };
    std::unique_ptr<profiler::TraceSink> guarded;
    if (trace) guarded = std::make_unique<GuardedSink>(std::move(trace), on_failure);
    // With live metrics under CUDASCOPE_METRICS; they go on when the trace fails.
    auto sink = open_recording_sinks(std::move(guarded), options_);
    session_ = std::make_unique<profiler::Session>(options_);
    session_->start(std::make_unique<GuardedSink>(std::move(sink), on_failure));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: not recording: %s\n", e.what());
    session_.reset();
    lazy_trace_ = nullptr;
    finished_ = true;
    return;
  }
  if (cupti_wanted_) {
    try {
      session_->attach_cupti();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope: recording without device activity: %s\n", e.what());
    }
  }
}

// On the session's writer thread (GuardedSink): the trace could not be written on.
void InjectionAgent::trace_failed(const std::string& error) noexcept {
  trace_failed_.store(true);
  std::string path;
  {
    std::lock_guard path_lock(path_mutex_);
    path = path_;
  }
  std::fprintf(stderr, "cudascope: stopped recording process %ld: %s; the program goes on unrecorded\n",
               static_cast<long>(getpid()), error.c_str());
  // "failed PID PATH\tERROR": one line shorter than PIPE_BUF, so it never interleaves.
  std::string line = "failed " + std::to_string(getpid()) + " " + path + "\t" + error;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (line.size() > 1000) line.resize(1000);
  write_progress_line(progress_fd_, line + "\n");
  // Nothing else reads the records (no live metrics): stop recording, off this thread (the
  // writer thread cannot join itself).
  if (!metrics_wanted_) {
    try {
      std::thread([] { InjectionAgent::instance().finish(); }).detach();
    } catch (const std::exception&) {
    }
  }
}

void InjectionAgent::attach_sim() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!configured_) source_ = profiler::SourceKind::kSim;
  }
  ensure_started();
}

void InjectionAgent::attach_cupti() noexcept {
  ensure_started();
  std::lock_guard lock(mutex_);
  cupti_wanted_ = true;
  if (session_ && session_->recording()) {
    try {
      session_->attach_cupti();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope: recording without device activity: %s\n", e.what());
    }
  }
}

void InjectionAgent::finish() noexcept {
  if (forked_child_.load()) return;
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (!session_) return;
  try {
    session_->stop();
  } catch (const std::exception& e) {
    std::lock_guard path_lock(path_mutex_);
    std::fprintf(stderr, "cudascope: finishing the trace '%s': %s\n", path_.c_str(), e.what());
    return;
  }
  write_summary_locked();
}

// After stop(): the trace is closed, so reading it back sees every event (exit_summary.h).
void InjectionAgent::write_summary_locked() noexcept {
  if (lazy_trace_ == nullptr || !lazy_trace_->opened() || trace_failed_.load() || !exit_summary_wanted()) return;
  std::string trace;
  {
    std::lock_guard path_lock(path_mutex_);
    trace = path_;
  }
  const ExitSummaryResult written = write_exit_summary(trace);
  if (!written.error.empty()) {
    // One line, naming both files: the trace is closed and whole whatever happened here.
    std::fprintf(stderr,
                 "cudascope: rank summary '%s' not written: %s (the trace '%s' is complete; "
                 "`cudascope stats --summary-out` of it makes the summary)\n",
                 written.path.c_str(), written.error.c_str(), trace.c_str());
    return;
  }
  // `cudascope run` lists it with the traces at the end; said here where run cannot be told.
  if (!write_progress_line(progress_fd_, "summary " + std::to_string(getpid()) + " " + written.path + "\n")) {
    std::fprintf(stderr, "cudascope: %s\n", written.line.c_str());
  }
}

}  // namespace cudascope::inject
