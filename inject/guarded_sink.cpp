#include "guarded_sink.h"

#include <cstdio>
#include <exception>
#include <utility>

namespace cudascope::inject {

GuardedSink::GuardedSink(std::unique_ptr<profiler::TraceSink> sink, OnFailure on_failure)
    : sink_(std::move(sink)), on_failure_(std::move(on_failure)) {}

template <class Step>
void GuardedSink::guarded(Step&& step) noexcept {
  if (failed()) return;
  std::string error;
  try {
    step();
    return;
  } catch (const std::exception& e) {
    try {
      error = e.what();
    } catch (...) {
    }
  } catch (...) {
    error = "unknown error";
  }
  failed_.store(true, std::memory_order_release);
  try {
    if (on_failure_) on_failure_(error);
  } catch (...) {
    std::fputs("cudascope: recording stopped after an error\n", stderr);
  }
}

void GuardedSink::begin(const profiler::TraceInfo& info) {
  // A trace that cannot even begin is the session's to report (it has not started).
  sink_->begin(info);
}

void GuardedSink::write(const profiler::Record* records, std::size_t count) {
  guarded([&] { sink_->write(records, count); });
}

void GuardedSink::flush() {
  guarded([&] { sink_->flush(); });
}

void GuardedSink::end(const profiler::TraceSummary& summary) {
  guarded([&] { sink_->end(summary); });
}

std::uint64_t GuardedSink::events_written() const noexcept { return sink_->events_written(); }

}  // namespace cudascope::inject
