#pragma once
// The injection library's one recording: configured from the environment, started by the
// first entry point that runs (NVTX may come before CUDA), finished at exit, on SIGINT /
// SIGTERM, or after CUDASCOPE_DURATION; a rank's summary is then written beside its trace
// (exit_summary.h).
//
// Environment (`cudascope run` sets these):
//   CUDASCOPE_TRACE=path        trace file (.json or .json.gz), a pattern with %r %p %h %%
//                               (exporters/trace_path.h); default cudascope-<pid>.json. A
//                               name another live process is writing gets ".<pid>" added.
//                               Named and created on the first record of CUDA or NVTX use
//                               (lazy_trace_sink.h): a process that loads the library but
//                               never uses CUDA (a launcher) writes no file
//   CUDASCOPE_TRACE_PID=pid     the process that owns a fixed `path`; any other process (a
//                               worker it started) writes path with ".<pid>" before the extension
//   CUDASCOPE_RUN_ID=id         the `cudascope run` recording the process (set by run): the
//                               trace's header names it (exporters/trace_path.h)
//   CUDASCOPE_ACTIVITIES=list   see ActivitySet::parse (default: ActivitySet::defaults(), or
//                               ActivitySet::metrics_only_defaults() for metrics without a trace)
//   CUDASCOPE_DELAY=s, CUDASCOPE_DURATION=s   record from s seconds after load, for s seconds
//                               (finite, 0 to 604800)
//   CUDASCOPE_CUPTI_BUFFER=bytes              each CUPTI activity buffer (4096 to 2^30, default 8 MiB)
//   Each is read by util/env_value.h; a value it refuses is named on stderr and the process is
//   not recorded (rather than recorded otherwise than asked).
//   CUDASCOPE_PROGRESS=path     the FIFO `cudascope run` reads (progress_channel.h), opened by
//                               path so that workers started with their descriptors closed
//                               reach it too: "trace <pid> <path>\n" when the trace file is
//                               opened, "<events> <dropped> <pid>\n" after each flush once it
//                               is, "failed <pid> <path>\t<error>\n" when it cannot be
//                               written on, and "summary <pid> <path>\n" when a rank's summary
//                               is written beside the closed trace (exit_summary.h)
//
// Thread-safety: every method may be called from any thread; they serialise on one mutex.
// A failure never stops the program being recorded: it is reported on stderr. A trace that
// cannot be written on (a full disk) ends at its last whole event, closed, and recording stops
// (live metrics, if served, go on).

#include <cudascope/profiler/session.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace cudascope::inject {

class LazyTraceSink;

class InjectionAgent {
 public:
  static InjectionAgent& instance();  // never destroyed: exit handlers use it

  // Starts recording (or schedules it after CUDASCOPE_DELAY) on the first call.
  void ensure_started() noexcept;
  // The sim backend loaded the library: its device activity comes through the runtime.
  void attach_sim() noexcept;
  // The driver loaded the library: add CUPTI's device activity (now or when recording starts).
  void attach_cupti() noexcept;
  // Stops recording and closes the trace. Idempotent.
  void finish() noexcept;

 private:
  InjectionAgent() = default;
  void start_locked() noexcept;
  // A write error ended the trace (guarded_sink.h): says so on stderr and to `cudascope run`.
  void trace_failed(const std::string& error) noexcept;
  void install_exit_handlers() noexcept;
  // A rank's summary beside its closed trace (exit_summary.h); called by finish().
  void write_summary_locked() noexcept;

  std::mutex mutex_;
  // Set in a child forked while recording: its copy of the session has no writer thread
  // and must not touch the parent's trace, so the child records nothing and finishes nothing.
  std::atomic<bool> forked_child_{false};
  std::atomic<bool> trace_failed_{false};  // set on the writer thread by trace_failed()
  bool configured_ = false;
  bool finished_ = false;
  bool cupti_wanted_ = false;
  bool metrics_wanted_ = false;  // CUDASCOPE_METRICS: records also feed live metrics
  profiler::SourceKind source_ = profiler::SourceKind::kNone;
  int progress_fd_ = -1;
  LazyTraceSink* lazy_trace_ = nullptr;  // the trace inside session_'s sink; null without a trace
  std::mutex path_mutex_;  // path_ is set on the session's writer thread when the file opens
  std::string path_;
  profiler::SessionOptions options_;
  std::unique_ptr<profiler::Session> session_;
};

}  // namespace cudascope::inject
