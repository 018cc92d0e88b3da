#pragma once
// Keeps a failure of a sink (a trace that cannot be written: a full disk, a file-size limit;
// any other error of ours) from reaching the session's writer thread, where an exception
// would terminate the program being recorded. The first failure is handed to `on_failure`
// (which says so on stderr and to `cudascope run`), and from then on the wrapped sink is
// left alone: the Chrome trace writer has already closed its file at the last event it
// wrote whole (exporters/chrome_trace_writer.h).
//
// Thread-safety: as TraceSink (begin -> (write | flush)* -> end from one thread at a time);
// failed() and events_written() from any thread.

#include <cudascope/profiler/trace_sink.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace cudascope::inject {

class GuardedSink final : public profiler::TraceSink {
 public:
  // Called once, on the thread that met the failure, with its message. Must not throw.
  using OnFailure = std::function<void(const std::string& error)>;

  GuardedSink(std::unique_ptr<profiler::TraceSink> sink, OnFailure on_failure);

  void begin(const profiler::TraceInfo& info) override;
  void write(const profiler::Record* records, std::size_t count) override;
  void flush() override;
  void end(const profiler::TraceSummary& summary) override;
  std::uint64_t events_written() const noexcept override;

  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }

 private:
  template <class Step>
  void guarded(Step&& step) noexcept;

  std::unique_ptr<profiler::TraceSink> sink_;
  OnFailure on_failure_;
  std::atomic<bool> failed_{false};
};

}  // namespace cudascope::inject
