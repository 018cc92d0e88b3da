#include "lazy_trace_sink.h"

#include <exception>
#include <utility>

namespace cudascope::inject {

bool shows_cuda_or_nvtx_use(const profiler::Record& record) noexcept {
  using profiler::RecordKind;
  // A switch with no default: a new kind is a compiler warning here (-Wswitch), so each
  // is placed on one side on purpose.
  switch (record.kind) {
    case RecordKind::kKernel:
    case RecordKind::kMemcpy:
    case RecordKind::kMemset:
    case RecordKind::kSync:
    case RecordKind::kRuntimeApi:
    case RecordKind::kDriverApi:
    case RecordKind::kNvtxPush:
    case RecordKind::kNvtxPop:
    case RecordKind::kNvtxMark:
    case RecordKind::kNvtxRangeStart:
    case RecordKind::kNvtxRangeEnd:
    case RecordKind::kAllocator:
    case RecordKind::kDeviceMemory:
    case RecordKind::kEventTiming:
    case RecordKind::kDropped:
      return true;
    case RecordKind::kOverhead:
    case RecordKind::kDevice:
    case RecordKind::kContext:
    case RecordKind::kStream:
    case RecordKind::kExternalCorrelation:
    case RecordKind::kThreadName:
    case RecordKind::kText:
      return false;
  }
  return true;  // not reached: every kind is listed above
}

LazyTraceSink::LazyTraceSink(Opener open) : open_trace_(std::move(open)) {}

void LazyTraceSink::begin(const profiler::TraceInfo& info) { info_ = info; }

void LazyTraceSink::write(const profiler::Record* records, std::size_t count) {
  if (failed_ || count == 0) return;
  if (!trace_) {
    bool used = held_.size() + count > kMaxHeldRecords;
    for (std::size_t i = 0; i < count && !used; ++i) used = shows_cuda_or_nvtx_use(records[i]);
    if (!used) {
      held_.insert(held_.end(), records, records + count);
      return;
    }
    open();
    if (!trace_) return;
  }
  trace_->write(records, count);
}

void LazyTraceSink::open() {
  try {
    std::unique_ptr<profiler::TraceSink> trace = open_trace_();
    trace->begin(info_);
    if (!held_.empty()) trace->write(held_.data(), held_.size());
    trace_ = std::move(trace);
  } catch (...) {
    // Passed on once: the GuardedSink around this one reports it (to `cudascope run` too,
    // which then does not take the run for a recorded one); later writes do nothing.
    failed_ = true;
    held_.clear();
    held_.shrink_to_fit();
    throw;
  }
  held_.clear();
  held_.shrink_to_fit();
  opened_.store(true, std::memory_order_release);
}

void LazyTraceSink::flush() {
  if (trace_) trace_->flush();
}

void LazyTraceSink::end(const profiler::TraceSummary& summary) {
  if (trace_) trace_->end(summary);
  held_.clear();
}

std::uint64_t LazyTraceSink::events_written() const noexcept {
  return opened() ? trace_->events_written() : 0;
}

}  // namespace cudascope::inject
