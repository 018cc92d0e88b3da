#pragma once
// The trace file of a recorded process, opened only once the process has used CUDA or NVTX.
//
// Every process below `cudascope run` that loads the injection library records, and some
// load it without doing any CUDA work: a launcher (`run -o trace_%r.json.gz -- torchrun ...`
// left a trace_norank.json.gz of process metadata beside the ranks'). Such a process must
// leave no file: not an empty trace, not one of metadata, which `cudascope stats
// trace_*.json.gz` would list as a rank "-".
// So the file is not named, claimed (exporters::claim_trace_path) or created when recording
// starts: records that say nothing of CUDA use (device, context and stream descriptions,
// thread names, CUPTI's overhead, external correlation ids) are held, and the first batch the
// session's writer drains with a record that does (shows_cuda_or_nvtx_use) opens the file
// (the opener names and claims it then), which receives the trace header, the held records
// and everything after, as if it had been open from the start.
//
// NVTX counts as use: NVTX_INJECTION64_PATH loads the library into a process that calls NVTX
// without CUDA (docs/ranks.md: a process records when it "initialises CUDA (or calls NVTX)"),
// and its ranges are what the user annotated.
//
// The opened file is written and flushed as an eagerly opened one is, so a process killed
// with SIGKILL leaves what it flushed; one killed before the first flush after its first CUDA
// or NVTX record (at most the session's flush interval, 200 ms) leaves no file, where an
// eagerly opened file would have held the header and no activity.
//
// Thread-safety: as TraceSink (begin -> (write | flush)* -> end from one thread at a time);
// events_written() and opened() from any thread.

#include <cudascope/profiler/trace_sink.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace cudascope::inject {

// True for a record that shows the process used CUDA or NVTX: device work (kernels, copies,
// fills, syncs, event timings), API calls, device memory and allocator actions, NVTX ranges
// and marks, and records lost (kDropped: what was lost was recorded activity). False for
// descriptions that any process loading CUDA produces, and for text continuing a record.
bool shows_cuda_or_nvtx_use(const profiler::Record& record) noexcept;

class LazyTraceSink final : public profiler::TraceSink {
 public:
  // Opens the trace (naming and claiming its file); called at most once, on the thread that
  // writes the first record showing use. What it throws passes out of that write, once (the
  // GuardedSink around this sink reports it); the process goes on unrecorded to a file.
  using Opener = std::function<std::unique_ptr<profiler::TraceSink>()>;

  // Records held before the file opens, at most; a process producing more descriptions than
  // this without any use opens its file rather than hold them without bound.
  static constexpr std::size_t kMaxHeldRecords = 1u << 16;

  explicit LazyTraceSink(Opener open);

  void begin(const profiler::TraceInfo& info) override;
  void write(const profiler::Record* records, std::size_t count) override;
  void flush() override;
  // Without a file, ends nothing and creates nothing.
  void end(const profiler::TraceSummary& summary) override;
  std::uint64_t events_written() const noexcept override;

  // Whether the trace file has been opened.
  bool opened() const noexcept { return opened_.load(std::memory_order_acquire); }

 private:
  void open();

  Opener open_trace_;
  profiler::TraceInfo info_;
  std::vector<profiler::Record> held_;
  std::unique_ptr<profiler::TraceSink> trace_;
  bool failed_ = false;
  std::atomic<bool> opened_{false};  // trace_ is set and begun
};

}  // namespace cudascope::inject
