#pragma once
// profiler::Session: records this process's CUDA activity into a TraceSink.
//
//   Session session(options);
//   session.start(exporters::open_chrome_trace("trace.json.gz"));  // or start() to keep records in memory
//   ... work ...
//   session.stop();            // forces CUPTI's buffers out, drains, closes the sink
//   session.export_to(sink);   // in-memory sessions only: replays the records
//
// Records come from the runtime's instrumentation observer (allocator events everywhere;
// kernels, copies, syncs and NVTX on the sim backend), from CUPTI on the cuda backend, and
// from the NVTX injection library. A writer thread drains the per-thread record buffers
// every flush_interval and streams them to the sink.
//
// Thread-safety: one Session records at a time in a process (start() throws otherwise).
// start/stop/export_to from one controlling thread; stats() from any thread. After stop(),
// a source thread that was already inside a report finishes it into the record buffers;
// such stragglers are discarded when the next session starts. Destroy a Session only once
// the work it recorded has finished (the runtime observer it installed lives in it).

#include <cudascope/profiler/activities.h>
#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/trace_sink.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace cudascope::profiler {

enum class SourceKind {
  kAuto,     // cupti when the runtime runs on the cuda backend and CUPTI is built in, else sim
  kSim,      // the runtime's observer only (the sim backend reports device activity itself)
  kCupti,    // CUPTI activity buffers, plus the runtime's observer for allocator events
  kNone,     // host-side records only (NVTX, allocator); a device source may attach later
};

struct SessionStats {
  std::uint64_t records = 0;
  std::uint64_t events = 0;  // trace events the sink wrote
  std::uint64_t dropped_buffer = 0;
  std::uint64_t dropped_cupti = 0;
  std::size_t buffer_bytes = 0;  // memory the record buffers hold now
};

struct SessionOptions {
  ActivitySet activities = ActivitySet::defaults();
  SourceKind source = SourceKind::kAuto;
  std::size_t cupti_buffer_bytes = 8u << 20;   // each CUPTI activity buffer
  std::size_t max_buffer_bytes = 256u << 20;   // all per-thread record buffers together
  std::chrono::milliseconds flush_interval{200};
  // Called on the writer thread after each flush.
  std::function<void(const SessionStats&)> on_flush;
  // Set: kernel records (and the launch records of the `launch`/`runtime` activities) are
  // sampled in windows of this plan rather than recorded for every kernel; the same object
  // tells readers each record's weight (kernel_sampling.h). For metrics-only recordings:
  // a trace written from a sampled session holds only the windows' kernels.
  std::shared_ptr<KernelSampling> kernel_sampling;
};

class Session {
 public:
  explicit Session(SessionOptions options = {});
  ~Session();  // stops a recording session
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts recording into `sink` (nullptr: into memory, for export_to). Throws
  // std::logic_error when another session records, std::runtime_error when the CUPTI
  // source cannot start (the message names the CUPTI call and its result).
  void start(std::unique_ptr<TraceSink> sink = nullptr);
  // Attaches CUPTI to a session started with SourceKind::kNone (the injection library
  // starts on the first NVTX call, before the driver loads it for CUDA).
  void attach_cupti();
  // Stops recording: flushes CUPTI, drains every buffer, ends the sink. Idempotent.
  void stop();
  // Replays an in-memory session's records into `sink` (begin, write, end). Only after stop().
  void export_to(TraceSink& sink) const;

  bool recording() const noexcept;
  SessionStats stats() const;
  const SessionOptions& options() const noexcept { return options_; }
  // The session recording now, or nullptr.
  static Session* current() noexcept;
  // In a child forked while a session records: stops the child's hooks feeding the copy of
  // the session (which has no writer thread); the parent's recording goes on. Async-signal-safe.
  static void detach_after_fork() noexcept;

 private:
  class Impl;
  SessionOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudascope::profiler
