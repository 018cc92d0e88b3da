#pragma once
// Loads a trace file into a TraceModel: cudascope's traces, torch.profiler (Kineto) traces
// and plain Chrome trace-event files (JSON object with "traceEvents", or a bare JSON array),
// any formatting (compact, indented, any key order, a UTF-8 byte-order mark first), plain or gzip.
//
// The file is streamed through a JSON parser (util::ByteReader): memory holds the model
// and a small window, never the text. A file cut short (a killed process, a copy stopped
// half way, a gzip stream without its end) is read up to its last complete event and the
// model says so (cut_short, a note). A file that is not a trace is an error naming the
// byte offset and what was expected there; damage in the trace object after a whole events
// array keeps the events and is a format problem naming the byte (the rest is not read).
// Input past the budget (/dev/zero, a gzip bomb)
// is an error, never unbounded memory.
//
// Thread-safety: free functions, no shared state; a TraceFollower belongs to one thread.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace cudascope::util {
class ByteSource;
class PeekedInput;
}

namespace cudascope::analysis {

struct TraceLoadOptions {
  // Most bytes of (decompressed) JSON to read; 0: util::input_budget() (CUDASCOPE_INPUT_BUDGET).
  std::uint64_t budget_bytes = 0;
  // Called now and then with the fraction of the input read; return false to cancel.
  std::function<bool(double)> progress;
};

struct TraceLoadResult {
  std::unique_ptr<TraceModel> model;  // null on error
  std::string error;                  // "<file>: byte N: <what was expected>"
  bool ok() const noexcept { return model != nullptr; }
};

// Reads `path` (plain or gzip; a pipe or device works too).
TraceLoadResult load_trace(const std::string& path, const TraceLoadOptions& options = {});
// Reads an input opened once (after a look at its head: detect_file_kind(), is_rank_summary()),
// from its first byte; its path names it in errors.
TraceLoadResult load_trace(util::PeekedInput& input, const TraceLoadOptions& options = {});
// Reads trace text already in memory; `origin` names it in errors.
TraceLoadResult load_trace_text(std::string_view text, const std::string& origin, const TraceLoadOptions& options = {});

// Follows a trace that is still being written (cudascope run streams its trace): each
// poll() reads what the file gained since the last one and appends its events to the
// model, without reading from the start again. Plain or gzip (a gzip trace is inflated
// from where the last poll stopped; its writer must flush whole deflate blocks, as ours does).
//
// Call order: construct -> poll() repeatedly (each returns the number of new events) ->
// model(). The model must not be read from another thread during poll().
class TraceFollower {
 public:
  explicit TraceFollower(std::string path, TraceLoadOptions options = {});
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;

  // New events appended, or -1 on error (error() says why). A file that does not exist yet
  // or is still empty gives 0.
  long long poll();
  const TraceModel& model() const;
  const std::string& error() const noexcept { return error_; }
  // True once the file's trace is closed (its last "]" and "}" were read).
  bool finished() const noexcept;

 private:
  struct State;
  long long poll_gzip(std::FILE* file, std::uint64_t budget);
  long long parse_more(util::ByteSource& source, std::uint64_t budget);
  std::unique_ptr<State> state_;
  std::string error_;
};

}  // namespace cudascope::analysis
