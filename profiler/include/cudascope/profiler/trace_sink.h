#pragma once
// Where a session's records go. The Chrome trace writer (cudascope::exporters) implements
// it; MemorySink keeps records for tests and for Session::export_to.
//
// Call order: begin -> (write | flush)* -> end, all from one thread at a time (the
// session's writer thread). write() receives each record together with the kText records
// that continue it.

#include <cudascope/profiler/record.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::profiler {

struct TraceInfo {
  std::uint32_t process_id = 0;
  std::string process_name;
  std::uint64_t start_ns = 0;  // host_time_ns when recording started
  std::string activities;      // ActivitySet::to_string()
  std::string source;          // "sim", "cupti" or "runtime"
  int rank = -1;               // RANK / WORLD_SIZE when set
  int world_size = -1;
};

struct TraceSummary {
  std::uint64_t records = 0;
  std::uint64_t dropped_buffer = 0;  // records lost because the record buffers were full
  std::uint64_t dropped_cupti = 0;   // records CUPTI reported lost, and those it could not time (incomplete)
  std::uint64_t end_ns = 0;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void begin(const TraceInfo& info) = 0;
  virtual void write(const Record* records, std::size_t count) = 0;
  // Makes everything written so far durable: a process killed after flush() returns leaves
  // a trace holding it.
  virtual void flush() = 0;
  virtual void end(const TraceSummary& summary) = 0;
  // Trace events written so far (for progress reports). Thread-safe.
  virtual std::uint64_t events_written() const noexcept { return 0; }
};

// Keeps every record in memory.
class MemorySink final : public TraceSink {
 public:
  void begin(const TraceInfo& info) override { info_ = info; }
  void write(const Record* records, std::size_t count) override { records_.insert(records_.end(), records, records + count); }
  void flush() override {}
  void end(const TraceSummary& summary) override { summary_ = summary; }

  const TraceInfo& info() const noexcept { return info_; }
  const std::vector<Record>& records() const noexcept { return records_; }
  const TraceSummary& summary() const noexcept { return summary_; }

 private:
  TraceInfo info_;
  std::vector<Record> records_;
  TraceSummary summary_;
};

}  // namespace cudascope::profiler
