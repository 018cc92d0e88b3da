#pragma once
// On-demand trace windows: a recording that serves live metrics without a trace file
// (`cudascope run --metrics ... --no-trace`) writes a trace for a window when asked, through
// GET /trace?duration=SECONDS&output=PATH on its metrics port (loopback clients only; what
// `cudascope trace --pid PID` sends). Outside windows the records only feed the metrics.
//
// TraceWindows is the sink the session writes to behind the metrics: it forwards records to
// the window's trace writer while a window is open and drops them otherwise. A window ends
// at the first flush after its duration (the session flushes every 200 ms by default), or
// when the recording ends.
//
// Thread-safety: the sink side runs on the session's writer thread; open() and status()
// from any thread.

#include <cudascope/profiler/trace_sink.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace cudascope::inject {

class TraceWindows final : public profiler::TraceSink {
 public:
  // Starts writing `path` (a Chrome trace, .json or .json.gz) for `duration`. Returns an
  // empty string, or why not (a window is already open, the file cannot be opened).
  std::string open(const std::string& path, std::chrono::duration<double> duration);
  // "idle" or "recording <path>", then the number of windows written so far.
  std::string status();

  void begin(const profiler::TraceInfo& info) override;
  void write(const profiler::Record* records, std::size_t count) override;
  void flush() override;
  void end(const profiler::TraceSummary& summary) override;

 private:
  void close_locked(std::uint64_t end_ns);

  std::mutex mutex_;
  profiler::TraceInfo info_;
  bool ended_ = false;
  std::unique_ptr<profiler::TraceSink> window_;
  std::string path_;
  std::chrono::steady_clock::time_point until_;
  std::uint64_t records_ = 0;
  unsigned windows_written_ = 0;
};

// Serves /trace on this process's metrics server for `windows`.
void serve_trace_windows(const std::shared_ptr<TraceWindows>& windows, const std::string& bind);

}  // namespace cudascope::inject
