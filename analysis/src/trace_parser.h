#pragma once
// The trace file's grammar on top of JsonCursor: the root (object with "traceEvents", or a
// bare array of events), the header members the model keeps (deviceProperties,
// distributedInfo, cudascope, cudascopeSummary, baseTimeNanoseconds), and each event's
// members. Shared by load_trace() and TraceFollower, which resumes it inside the events
// array after the last complete event.
//
// Thread-safety: none; one parser per load.

#include "trace_json.h"
#include "trace_model_builder.h"

#include <cstdint>
#include <functional>
#include <string>

namespace cudascope::analysis::detail {

// Where a parse stands, so a follower can resume there.
enum class TracePhase : std::uint8_t {
  start,          // nothing read yet (or the header is read again from byte 0)
  first_event,    // just after the events array's '['
  next_event,     // after a complete event: ',' or ']' comes next
  after_events,   // after the events array: more root members or the root's end
  done,           // the root value ended
};

// What the header members said, gathered across the file.
struct TraceHeader {
  bool cudascope = false;  // a "cudascope" member: our writer
  bool kineto = false;     // Kineto's members (schemaVersion, deviceProperties, baseTimeNanoseconds, ...)
  bool array_form = false; // the root was a bare array
  bool saw_events = false; // "traceEvents" was found
  bool summary_complete = false;
  bool has_summary = false;
  std::int64_t summary_dropped_buffer = 0;
  std::int64_t summary_dropped_cupti = 0;
  std::uint64_t events_seen = 0;  // elements of the events array read so far, kept or not
};

class TraceParser {
 public:
  // `base_offset`: the stream offset of the reader's first byte within the file (for
  // messages and resume points). `progress` may be empty.
  TraceParser(util::ByteReader& reader, TraceModelBuilder& builder, TraceHeader& header, std::uint64_t base_offset,
              std::function<bool(double)> progress);

  // Parses from `phase` until the input ends or the root closes. Returns ok when the root
  // closed, end when the input ended first (resume_offset()/phase() say where to go on),
  // syntax on an error (error() says what and where).
  JsonStatus run(TracePhase phase);
  TracePhase phase() const noexcept { return phase_; }
  // File offset just past the last complete event (or the events array's '[' or ']').
  std::uint64_t resume_offset() const noexcept { return resume_offset_; }
  // "byte N: what was expected" (or the cancel / input error).
  const std::string& error() const noexcept { return error_; }
  const JsonCursor& cursor() const noexcept { return cursor_; }
  std::uint64_t events() const noexcept { return events_; }

 private:
  JsonStatus read_past_damage();
  JsonStatus root();
  JsonStatus root_members(bool first);
  JsonStatus header_member(const std::string& key);
  JsonStatus events_array(TracePhase phase);
  JsonStatus event();
  JsonStatus id_value(TraceIdValue& value, std::string& text, const char* field);
  JsonStatus time_value(std::int64_t& ns, bool& has, const char* field);
  void problem(const std::string& what);  // about the event being read
  // A format problem: listed while fewer than a few hundred are, else only counted.
  void report(std::string line);
  // A format problem listed however many came before it (the damage that ends the reading).
  void report_listed(std::string line);
  JsonStatus syntax();

  util::ByteReader& reader_;
  JsonCursor cursor_;
  TraceModelBuilder& builder_;
  TraceHeader& header_;
  std::uint64_t base_;
  std::function<bool(double)> progress_;
  TracePhase phase_ = TracePhase::start;
  std::uint64_t resume_offset_ = 0;
  std::uint64_t events_ = 0;  // events read by this parser, good or skipped
  bool reported_time_ = false;  // this event's "ts" or "dur" already has a problem reported
  std::string error_;
  // Buffers reused across events.
  std::string key_, ph_, name_, cat_, id_text_, args_, number_, pid_text_, tid_text_, scratch_;
  EventDraft draft_;
};

}  // namespace cudascope::analysis::detail
