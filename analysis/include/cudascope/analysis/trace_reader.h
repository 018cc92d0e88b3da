#pragma once
// Reads a Chrome trace written by ChromeTraceWriter (plain or gzip) back into events, for
// `cudascope stats` and the tests. A trace cut short by a killed process is closed after
// its last complete event line and read as far as it goes (Trace::complete is then false).
//
// Thread-safety: free functions, no shared state.

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct TraceEvent {
  std::string ph;
  std::string name;
  std::string cat;
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t ts_ns = 0;   // "ts" (microseconds in the file) in nanoseconds
  std::int64_t dur_ns = -1; // -1: no "dur"
  std::string id;           // flow / async id, as text
  std::int64_t bytes = -1;  // args.bytes of copies and fills
  std::string args_json;    // the whole "args" object, as written
};

struct TraceDevice {
  int id = 0;
  std::string name;
  std::int64_t total_memory = 0;
};

struct Trace {
  std::vector<TraceEvent> events;
  std::vector<TraceDevice> devices;
  bool complete = false;  // the writer's summary was found: the recording ended normally
  bool repaired = false;  // the file was cut short and closed by the reader
  std::int64_t dropped_buffer = 0;
  std::int64_t dropped_cupti = 0;
  int rank = -1;
  int world_size = -1;
  std::string source;
  // Violations of the Chrome trace format's rules met while reading (wrong field types).
  std::vector<std::string> format_problems;
};

struct TraceReadResult {
  Trace trace;
  std::string error;  // empty on success; else names the file and what was wrong where
  bool ok() const noexcept { return error.empty(); }
};

TraceReadResult read_trace(const std::string& path);
// From text already in memory (`origin` names it in errors).
TraceReadResult parse_trace(std::string text, const std::string& origin);

// The text of a trace cut short, closed after its last complete event ("" when `text` is
// not a cudascope trace). Complete traces come back unchanged.
std::string close_truncated_trace(const std::string& text);

// Reads a file, gunzipping when it starts with the gzip magic; a truncated gzip stream
// yields what it holds. Empty `error` on success.
std::string read_maybe_gzip(const std::string& path, std::string& error);

// Rewrites a trace file cut short (the process was killed) as a closed, loadable trace.
// Returns an empty string on success or when nothing needed doing, else the problem.
std::string repair_trace_file(const std::string& path);

}  // namespace cudascope::analysis
