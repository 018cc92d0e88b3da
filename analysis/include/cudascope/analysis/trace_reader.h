#pragma once
// A trace read back as a list of plain events with their fields as strings: the simple form
// for tests and small tools. Built from the compact TraceModel (trace_model.h), which is
// what large traces, `cudascope stats` and the viewer use; the model is kept alongside.
// A trace cut short (a killed process) is read up to its last complete event
// (Trace::repaired, Trace::complete false).
//
// Thread-safety: free functions, no shared state.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct TraceEvent {
  std::string ph;
  std::string name;
  std::string cat;
  std::int64_t pid = 0;     // a string "pid" or "tid" reads as 0 here (see the model's tracks)
  std::int64_t tid = 0;
  std::int64_t ts_ns = 0;   // "ts" (microseconds in the file) in nanoseconds
  std::int64_t dur_ns = -1; // -1: no "dur" (a B's duration is in the model, not here)
  std::string id;           // flow / async id, as text
  std::int64_t bytes = -1;  // args.bytes of copies and fills
  std::string args_json;    // the whole "args" object, minified
};

struct Trace {
  std::vector<TraceEvent> events;
  std::vector<TraceDevice> devices;
  bool complete = false;  // cudascope: the writer's summary was found; others: read to the end
  bool repaired = false;  // the file was cut short and read up to its last complete event
  std::int64_t dropped_buffer = 0;
  std::int64_t dropped_cupti = 0;
  int rank = -1;
  int world_size = -1;
  std::string source;
  // Violations of the Chrome trace format's rules met while reading (wrong field types).
  std::vector<std::string> format_problems;
  // The compact model the events above were expanded from.
  std::shared_ptr<const TraceModel> model;
};

struct TraceReadResult {
  Trace trace;
  std::string error;  // empty on success; else names the file and what was wrong where
  bool ok() const noexcept { return error.empty(); }
};

// Reads any trace load_trace() reads (ours, Kineto, Chrome; plain or gzip).
TraceReadResult read_trace(const std::string& path);
// From text already in memory (`origin` names it in errors).
TraceReadResult parse_trace(const std::string& text, const std::string& origin);
// The plain-event form of a loaded model.
Trace expand_trace(std::shared_ptr<const TraceModel> model);

// Rewrites a trace file cut short (the process was killed) as a closed trace, keeping every
// complete event (gzip stays gzip). Returns an empty string on success or when nothing
// needed doing, else the problem.
std::string repair_trace_file(const std::string& path);

}  // namespace cudascope::analysis
