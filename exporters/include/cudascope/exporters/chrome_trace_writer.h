#pragma once
// Chrome Trace Event JSON, streamed: the profiler's TraceSink that writes a trace Perfetto,
// chrome://tracing and Holistic Trace Analysis open, following Kineto's conventions:
//   - pid = device index for device activity, the process id for host activity;
//     tid = stream id on a device, OS thread id on the host; process/thread names as "M";
//   - kernels, copies, fills, syncs, API calls as "X" (ts/dur in microseconds);
//   - an "ac2g" flow ("s" on the launching API call, "f" with bp "e" on the kernel);
//   - NVTX push/pop as "B"/"E" on the thread, marks as "i", start/end ranges as "b"/"e";
//   - "C" counters of allocated and reserved device memory, and of dropped records;
//   - "distributedInfo" (backend, rank, world_size) when RANK is set, local_rank and host
//     when LOCAL_RANK is set too;
//   - NCCL kernels with "communication":true and "collective" in their args.
//
// Every timestamp the trace holds ("ts", "startNs") passes through one point, which applies
// the test setting CUDASCOPE_TEST_CLOCK_OFFSET_NS (docs/ranks.md: a clock offset on purpose,
// read once at begin(); times below 0 are written as 0). Durations are not changed.
//
// Layout: the header and "traceEvents":[ come first, one event per line; deviceProperties
// and the "cudascope" summary (records, dropped, "complete": true) after the array. A killed
// process leaves every flushed line; read_trace() closes such a file.
//
// A write error (a full disk, a file-size limit) ends the trace, never the process: the
// file is cut back to the last event it holds whole (a gzip file: its last flush) and closed
// there, its summary saying "complete":false and the error (trace_output.h keeps a little
// room reserved for that); the call that met
// the error throws std::runtime_error naming the file and the error, and every later call
// does nothing. The writer never raises SIGXFSZ in the process.
//
// Thread-safety: as TraceSink (one writer thread); events_written() from any thread.

#include <cudascope/profiler/trace_sink.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::exporters {

namespace detail {
class FlowPairing;
struct FlowPair;
class TraceOutput;  // exporters/src/trace_output.h
}  // namespace detail

class ChromeTraceWriter final : public profiler::TraceSink {
 public:
  // Writes to `output`; open_chrome_trace() and create_chrome_trace_in() make one.
  explicit ChromeTraceWriter(std::unique_ptr<detail::TraceOutput> output);
  ~ChromeTraceWriter() override;

  void begin(const profiler::TraceInfo& info) override;
  void write(const profiler::Record* records, std::size_t count) override;
  void flush() override;
  void end(const profiler::TraceSummary& summary) override;
  std::uint64_t events_written() const noexcept override { return events_.load(std::memory_order_relaxed); }
  // Whether a write error ended the trace early.
  bool failed() const noexcept { return failed_; }

 private:
  // Runs one step of writing; a failure in it ends the trace (see above) and throws.
  template <class Step>
  void guarded(Step&& step);
  [[noreturn]] void stop_after_failure(const std::string& error);

  // Event text (chrome_trace_writer.cpp).
  void write_record(const profiler::Record& r, const profiler::Record* next, std::size_t available);
  void begin_event(const char* ph);
  void end_event();
  void common(const char* ph, const std::string& name, const char* cat, std::int64_t pid, std::int64_t tid, std::uint64_t ts_ns);
  // A time as the trace writes it: with the test clock offset applied.
  std::uint64_t shifted(std::uint64_t ts_ns) const noexcept {
    if (clock_offset_ns_ >= 0) return ts_ns + static_cast<std::uint64_t>(clock_offset_ns_);
    const auto back = static_cast<std::uint64_t>(-clock_offset_ns_);
    return ts_ns > back ? ts_ns - back : 0;
  }
  void duration(const profiler::Record& r);
  void device_track(int device, std::int64_t stream);
  void host_thread(std::uint32_t tid);
  const std::string& demangled(const char* name);
  std::uint32_t tid_of(const profiler::Record& r) const;

  // One method per record kind. Device side (chrome_trace_device_events.cpp):
  void device_args(const profiler::Record& r);
  void kernel(const profiler::Record& r);
  void communication_args(const std::string& kernel_name);
  void memcpy(const profiler::Record& r);
  void memset(const profiler::Record& r);
  void sync(const profiler::Record& r);
  void allocator(const profiler::Record& r);
  void device_memory(const profiler::Record& r);
  void event_timing(const profiler::Record& r);
  void overhead(const profiler::Record& r);
  void device_info(const profiler::Record& r);
  void stream_info(const profiler::Record& r);
  void flow_device(const profiler::Record& r);
  // Host side (chrome_trace_host_events.cpp):
  void api_call(const profiler::Record& r);
  void nvtx_args(const profiler::Record& r);
  void nvtx_push(const profiler::Record& r, const profiler::Record* next, std::size_t available);
  void nvtx_pop(const profiler::Record& r);
  void nvtx_mark(const profiler::Record& r, const profiler::Record* next, std::size_t available);
  void nvtx_range_start(const profiler::Record& r, const profiler::Record* next, std::size_t available);
  void nvtx_range_end(const profiler::Record& r);
  void external_correlation(const profiler::Record& r);
  void thread_name(const profiler::Record& r);
  void dropped(const profiler::Record& r);
  void flow_api(const profiler::Record& r);
  // The "s"/"f" events of one flow arrow from a launch to its device activity.
  void flow_arrow(const detail::FlowPair& pair);

  std::unique_ptr<detail::TraceOutput> output_;
  std::string buffer_;
  profiler::TraceInfo info_;
  std::int64_t pid_ = 0;
  std::int64_t clock_offset_ns_ = 0;  // CUDASCOPE_TEST_CLOCK_OFFSET_NS
  bool first_event_ = true;
  bool ended_ = false;
  bool failed_ = false;
  std::atomic<std::uint64_t> events_{0};
  std::uint64_t events_flushed_ = 0;  // events_ at the last flush
  std::uint64_t last_ts_ns_ = 0;

  std::set<int> devices_;
  std::set<std::pair<int, std::int64_t>> streams_;
  std::set<std::uint32_t> threads_;
  std::map<int, profiler::Record> device_info_;
  std::unordered_map<std::uint32_t, std::vector<std::string>> open_ranges_;  // per thread, for closing at end
  std::unordered_map<std::uint64_t, std::string> open_async_;              // nvtxRangeStart id -> name
  std::unordered_map<std::uint32_t, std::uint64_t> external_ids_;          // correlation -> external id
  std::unordered_map<const char*, std::string> demangled_;
  std::unique_ptr<detail::FlowPairing> flows_;  // null when the trace has no launch calls to pair
};

// A ChromeTraceWriter on `path` (gzip when it ends in ".gz"), created or truncated.
// Throws std::runtime_error naming the path and the system error.
std::unique_ptr<profiler::TraceSink> open_chrome_trace(const std::string& path);

// A ChromeTraceWriter on a new file `name` (one path component; gzip when it ends in ".gz")
// in the directory open as `directory_fd`: never through a symbolic link, never over an
// existing file (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600). Throws std::system_error with
// errno (EEXIST when the name is taken) naming `shown_path`.
std::unique_ptr<profiler::TraceSink> create_chrome_trace_in(int directory_fd, const std::string& name,
                                                            const std::string& shown_path);

}  // namespace cudascope::exporters
