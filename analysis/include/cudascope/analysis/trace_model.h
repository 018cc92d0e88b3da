#pragma once
// The in-memory form of a trace: cudascope's own, torch.profiler (Kineto) and plain Chrome
// trace-event files all load into this one model, which `cudascope stats`, `--check` and
// the viewer's timeline read.
//
// Compact by design (a 1 GB trace of ~10M events fits in about its file size): names,
// categories and string ids are interned once; times are integer nanoseconds; each (pid,
// tid) is a track; each event's "args" object is kept as its minified JSON text in one
// arena and parsed only when asked for (arg_int, arg_number, arg_string). Events keep the
// file's order (index = position among the file's events), so a reader can replay them.
//
// Built by load_trace() (trace_loader.h). After loading, the model is immutable except
// through TraceFollower (trace_loader.h), which appends what a growing file gained;
// reading from several threads is safe while nothing appends.

#include <cudascope/analysis/intern_tables.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::analysis {

inline constexpr std::uint32_t kNoString = StringTable::kNone;  // a missing name, category or label
inline constexpr std::uint32_t kNoEvent = UINT32_MAX;   // an unresolved event reference
inline constexpr std::uint64_t kNoId = UINT64_MAX;      // an event without "id"
inline constexpr std::uint64_t kNoArgs = UINT64_MAX;    // an event without "args"

// Which producer wrote the file, decided by content: cudascope's "cudascope" header, Kineto's
// "deviceProperties"/"schemaVersion"/"baseTimeNanoseconds" or its categories, else Chrome.
enum class TraceFormat : std::uint8_t { cudascope, kineto, chrome };
const char* to_string(TraceFormat format) noexcept;

// A GPU of the trace ("deviceProperties").
struct TraceDevice {
  int id = 0;
  std::string name;
  std::int64_t total_memory = 0;
};

class TraceModel {
 public:
  // One event of the file. 48 bytes.
  struct Event {
    std::int64_t ts_ns = 0;   // "ts" (microseconds in the file) in nanoseconds, exact to the ns
    std::int64_t dur_ns = -1; // X: "dur"; B: until its matching E; b: until its e; else -1
                              // (-1 also for a B or b never closed)
    std::uint64_t args = kNoArgs;  // handle of the "args" text (args_json()); kNoArgs: none
    std::uint64_t id = kNoId;      // "id" of flow (s/t/f) and async (b/n/e) events; a string
                                   // id is interned: id_is_string(), then string(id)
    std::uint32_t name = kNoString;
    std::uint32_t cat = kNoString;
    std::uint32_t track = 0;       // index into tracks()
    char ph = 0;                   // the "ph" letter: X B E i I C M s t f b n e ...
    std::uint8_t flags = 0;        // kFlag* below
    std::uint16_t depth = 0;       // nesting level on its track (slices and instants), 0 = top

    bool is_slice() const noexcept { return ph == 'X' || ph == 'B' || ph == 'b'; }
    std::int64_t end_ns() const noexcept { return dur_ns < 0 ? ts_ns : ts_ns + dur_ns; }
  };
  static constexpr std::uint8_t kFlagIdIsString = 1;   // `id` is a string id
  static constexpr std::uint8_t kFlagBindEnclosing = 2; // flow "bp":"e": binds to the enclosing slice
  static constexpr std::uint8_t kFlagUnmatched = 4;     // E/e with no open B/b
  static constexpr std::uint8_t kFlagGlobalScope = 8;   // instant "s":"g"
  static constexpr std::uint8_t kFlagProcessScope = 16; // instant "s":"p"
  // "pid" / "tid" written as a string holding a number ("1"): read as that number (its
  // process and thread are those of 1), kept for checks of writers that promise numbers.
  static constexpr std::uint8_t kFlagPidWasText = 32;
  static constexpr std::uint8_t kFlagTidWasText = 64;

  // A process: "pid" and what the "M" events said of it.
  struct Process {
    // A "pid" that is a number, or a string holding one ("1": that number, kFlagPidWasText on
    // the events that wrote it so), is `pid`, with `pid_text` kNoString. Any other string
    // ("Spans", "07") is a process of its own: `pid_text` is its text, `pid` its string id.
    std::int64_t pid = 0;
    std::uint32_t pid_text = kNoString;
    std::uint32_t name = kNoString;      // M process_name
    std::uint32_t labels = kNoString;    // M process_labels
    std::int64_t sort_index = 0;         // M process_sort_index (else pid)
    int device = -1;                     // a GPU: its index (Kineto/cudascope put GPU N at pid N)
  };

  // A thread of a process (CPU thread, or a GPU stream for a device): one timeline row.
  struct Track {
    std::uint32_t process = 0;           // index into processes()
    // As a process's pid: a number or a string holding one is `tid` (kFlagTidWasText on the
    // events that wrote a string); any other string is a thread of its own, `tid_text` its
    // text and `tid` its string id.
    std::int64_t tid = 0;
    std::uint32_t tid_text = kNoString;
    std::uint32_t name = kNoString;      // M thread_name
    std::int64_t sort_index = 0;         // M thread_sort_index (else tid)
    // Slices (X, B, b) and instants (i, I) on this track, by start time, longer first at
    // equal starts (a parent before its children). Indices into events.
    std::vector<std::uint32_t> events;
    std::uint16_t max_depth = 0;
  };

  // A flow arrow (s ... f with the same cat and id), resolved to the slices it binds:
  // "s" to the slice enclosing it on its track; "f" to the enclosing slice with "bp":"e",
  // else to the next slice starting at or after it (Chrome's rules).
  struct Flow {
    std::uint64_t id = kNoId;
    std::uint32_t cat = kNoString;
    std::uint32_t from_event = kNoEvent;  // the s event itself
    std::uint32_t to_event = kNoEvent;    // the f event itself
    std::uint32_t from_slice = kNoEvent;  // bound slices, kNoEvent when none encloses
    std::uint32_t to_slice = kNoEvent;
  };

  // A counter ("C" events of one name in one process); each key of their "args" a series.
  struct CounterSeries {
    std::uint32_t key = kNoString;
    std::vector<std::int64_t> ts_ns;
    std::vector<double> values;
  };
  struct Counter {
    std::uint32_t process = 0;
    std::uint32_t name = kNoString;
    std::vector<CounterSeries> series;
  };

  TraceModel();
  ~TraceModel();
  TraceModel(TraceModel&&) noexcept;
  TraceModel& operator=(TraceModel&&) noexcept;

  // --- Events, in file order ---
  std::size_t event_count() const noexcept { return count_; }
  const Event& event(std::size_t index) const noexcept { return chunks_[index >> kChunkBits][index & kChunkMask]; }
  std::string_view name(const Event& e) const { return string(e.name); }
  std::string_view cat(const Event& e) const { return string(e.cat); }
  // The event's "args" object as minified JSON ("" when it has none).
  std::string_view args_json(const Event& e) const;
  // One member of "args", parsed on demand: an integer (also a whole-number double), any
  // number, or a string. nullopt when absent or of another type.
  std::optional<std::int64_t> arg_int(const Event& e, std::string_view key) const;
  // An integer up to UINT64_MAX, written as digits (hashes and ids above INT64_MAX: the NCCL
  // communicator in an NCCL range's "payload"). nullopt when absent, negative or not so written.
  std::optional<std::uint64_t> arg_uint(const Event& e, std::string_view key) const;
  std::optional<double> arg_number(const Event& e, std::string_view key) const;
  std::optional<std::string> arg_string(const Event& e, std::string_view key) const;
  bool id_is_string(const Event& e) const noexcept { return (e.flags & kFlagIdIsString) != 0; }
  // The id as text ("" when none): the number, or the string the file used.
  std::string id_text(const Event& e) const;

  // --- Strings (the analysis library's interning table, intern_tables.h) ---
  const StringTable& strings() const noexcept { return strings_; }
  // The text of a string id; "" for kNoString.
  std::string_view string(std::uint32_t id) const { return id == kNoString ? std::string_view() : strings_.get(id); }

  // --- Rows ---
  const std::vector<Process>& processes() const noexcept { return processes_; }
  const std::vector<Track>& tracks() const noexcept { return tracks_; }
  // Track indices in the order Perfetto shows them: processes by sort index then pid,
  // threads by sort index then tid.
  std::vector<std::uint32_t> track_order() const;
  // The track's display name: thread_name, else "stream N" for a GPU, else "thread N".
  std::string track_label(std::uint32_t track) const;
  std::string process_label(std::uint32_t process) const;

  const std::vector<Flow>& flows() const noexcept { return flows_; }
  const std::vector<Counter>& counters() const noexcept { return counters_; }

  // --- What the file said of itself ---
  TraceFormat format = TraceFormat::chrome;
  std::vector<TraceDevice> devices;
  int rank = -1;          // distributedInfo
  int world_size = -1;
  int local_rank = -1;    // distributedInfo's local_rank (cudascope; -1 when absent)
  std::string host;       // distributedInfo's host (cudascope; empty when absent)
  std::string distributed_backend;  // distributedInfo's backend ("nccl", "gloo", ...)
  std::string source;     // cudascope: "cuda" or "sim"
  std::int64_t base_time_ns = 0;  // Kineto's baseTimeNanoseconds (0: none)
  bool complete = false;  // cudascope: the writer's summary says the recording ended normally;
                          // other formats: the file was read to its end
  bool cut_short = false; // the file ended before the trace did; read to its last whole event
  // When cut_short: where the file ends and why ("the file ends at byte N before the trace
  // does (gzip data ends early ...)"), the start of the loader's note; else empty. Commands
  // that must refuse a partial trace (`stats --check`, `diff --fail-if`) quote it.
  std::string cut_short_reason;
  std::int64_t dropped_buffer = 0;
  std::int64_t dropped_cupti = 0;
  std::int64_t min_ts_ns = 0;  // over all events with a time (0 when none)
  std::int64_t max_ts_ns = 0;  // latest start or end
  std::uint64_t input_bytes = 0;  // bytes of JSON read (after gunzip)
  // What a user should know about how the file was read ("cut short at byte N: read up to
  // its last complete event", "3 events without \"ph\" skipped", ...).
  std::vector<std::string> notes;
  // Violations of the trace format's rules met while reading (wrong field types), each
  // naming the event index or the byte; at most a few hundred are kept (and the damage after
  // the events array that ended the reading, always), then a line with how many more.
  std::vector<std::string> format_problems;
  std::uint64_t format_problem_count = 0;  // all of them, listed or not

  // Bytes held (events, args, strings, tracks, flows, counters), for budgets and benchmarks.
  std::size_t memory_bytes() const noexcept;

 private:
  friend class TraceModelBuilder;
  static constexpr unsigned kChunkBits = 16;
  static constexpr std::size_t kChunkMask = (std::size_t{1} << kChunkBits) - 1;

  // Fixed-size chunks (growth never copies) in storage from malloc, not new[]: constructing a
  // chunk's 65,536 events would write all 3 MB of it for a trace of a few events, and each
  // event is written when added (an Event is an aggregate, so malloc's storage holds Events).
  struct FreeChunk {
    void operator()(Event* chunk) const noexcept { std::free(chunk); }
  };
  std::vector<std::unique_ptr<Event[], FreeChunk>> chunks_;
  std::size_t count_ = 0;
  // Args text, each a 4-byte length then the bytes; a handle is (chunk << 32 | offset).
  std::vector<std::unique_ptr<char[]>> args_chunks_;
  std::uint64_t args_used_ = 0;   // bytes used in the last chunk
  std::uint64_t args_chunk_size_ = 0;
  std::size_t args_bytes_ = 0;    // all chunks' sizes
  StringTable strings_;
  std::vector<Process> processes_;
  std::vector<Track> tracks_;
  std::vector<Flow> flows_;
  std::vector<Counter> counters_;
};

}  // namespace cudascope::analysis
