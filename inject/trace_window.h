#pragma once
// On-demand trace windows: a recording that serves live metrics without a trace file
// (`cudascope run --metrics ... --no-trace`) writes a trace for a window when its owner asks,
// through GET /trace?token=TOKEN&duration=SECONDS[&gzip=1] on its metrics port (loopback
// clients only; what `cudascope trace --pid PID` sends). Outside windows the records only
// feed the metrics.
//
// Control paths are the owner's (docs/metrics-security.md):
//   - the request must carry the job's token, CUDASCOPE_TRACE_TOKEN, which `cudascope run`
//     draws at random and puts in the program's environment: /proc/PID/environ is readable
//     only by the job's user (and root), so only they can ask for a window;
//   - windows are written only into CUDASCOPE_TRACE_WINDOW_DIR, the directory fixed (opened)
//     when the job starts, under names the program chooses (cudascope-window-PID-N.json),
//     created with O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600: never through a link, never over
//     a file; a request naming its own output is refused;
//   - a query value with a control character (NUL) or a bad escape, or a duration that is not
//     a finite number of seconds in (0, 3600], is refused.
// Without a token and a directory the program serves no /trace at all, and says so on stderr.
//
// TraceWindows is the sink the session writes to behind the metrics: it forwards records to
// the window's trace writer while a window is open and drops them otherwise. A window ends
// at the first flush after its duration (the session flushes every 200 ms by default), or
// when the recording ends. A window that cannot be written (a full disk) ends there, closed
// at its last whole event, and the status says why.
//
// Thread-safety: the sink side runs on the session's writer thread; open() and status()
// from any thread.

#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/trace_sink.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cudascope::inject {

class TraceWindows final : public profiler::TraceSink {
 public:
  // Windows go into the directory open as `directory_fd` (taken over), shown as `directory`.
  TraceWindows(int directory_fd, std::string directory);
  ~TraceWindows() override;

  // A sampled recording (kernel_sampling.h): while a window is written every kernel is
  // recorded, so the window holds them all, not a sample. Set before the session starts.
  void set_kernel_sampling(std::shared_ptr<profiler::KernelSampling> sampling) { sampling_ = std::move(sampling); }

  // Starts writing a new window file for `duration`. Returns its path in `path`, and an
  // empty string, or why not (a window is already open, no file could be created).
  std::string open(std::chrono::duration<double> duration, bool gzip, std::string& path);
  // "idle" or "recording <path>", then "windows <written>", "last <path>" when one was
  // written, and "failed <error>" when the last window stopped early.
  std::string status();

  void begin(const profiler::TraceInfo& info) override;
  void write(const profiler::Record* records, std::size_t count) override;
  void flush() override;
  void end(const profiler::TraceSummary& summary) override;

 private:
  void write_header_locked();
  void close_locked(std::uint64_t end_ns);
  void failed_locked(const std::exception& e);
  void release_full_locked();

  std::mutex mutex_;
  int directory_fd_;
  std::string directory_;
  profiler::TraceInfo info_;
  bool begun_ = false;           // the session has begun: info_ is its
  bool header_pending_ = false;  // the open window's header waits for begin()
  std::uint64_t window_start_ns_ = 0;
  bool ended_ = false;
  std::unique_ptr<profiler::TraceSink> window_;
  std::string path_, last_path_, last_failure_;
  std::chrono::steady_clock::time_point until_;
  std::uint64_t records_ = 0;
  unsigned windows_written_ = 0;
  unsigned next_number_ = 1;
  std::shared_ptr<profiler::KernelSampling> sampling_;
  bool holding_full_ = false;  // this window asked sampling_ for every kernel
};

// The query of a /trace request, decoded; false (and `problem`) for a malformed escape or a
// control character (NUL included) in a name or value.
bool parse_trace_query(const std::string& query, std::map<std::string, std::string>& out, std::string& problem);

// Serves /trace on this process's metrics server for `windows`, to requests with `token`.
void serve_trace_windows(const std::shared_ptr<TraceWindows>& windows, const std::string& bind, const std::string& token);

}  // namespace cudascope::inject
