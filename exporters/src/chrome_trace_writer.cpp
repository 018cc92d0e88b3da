#include <cudascope/exporters/chrome_trace_writer.h>

#include "chrome_trace_common.h"
#include "flow_pairing.h"
#include "trace_output.h"

#include <cudascope/exporters/trace_path.h>
#include <cudascope/util/env_value.h>

#include <cxxabi.h>
#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>

namespace cudascope::exporters {
using detail::append_int;
using detail::append_json_string;
using detail::append_us;
using profiler::Record;
using profiler::RecordKind;

namespace {
// An integer environment variable, or -1 when unset or not a number.
int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 0 && value <= INT32_MAX ? static_cast<int>(value) : -1;
}

// Kineto's "distributedInfo" (backend, rank, world_size), written when RANK is set; with
// LOCAL_RANK too (torchrun, accelerate and deepspeed set both), local_rank and the host, which
// a merge of several machines' ranks uses to tell one machine's GPUs from another's (the host
// also when the test setting CUDASCOPE_TEST_HOSTNAME names one).
// The backend is "nccl": the one CUDA jobs use (TORCH_DISTRIBUTED_BACKEND overrides it).
void append_distributed_info(std::string& out, const profiler::TraceInfo& info) {
  if (info.rank < 0) return;
  out += ",\"distributedInfo\":{\"backend\":";
  const char* backend = std::getenv("TORCH_DISTRIBUTED_BACKEND");
  append_json_string(out, backend != nullptr && *backend != '\0' ? backend : "nccl");
  out += ",\"rank\":";
  append_int(out, info.rank);
  out += ",\"world_size\":";
  append_int(out, info.world_size >= 0 ? info.world_size : 1);
  const int local_rank = env_int("LOCAL_RANK");
  if (local_rank >= 0) {
    out += ",\"local_rank\":";
    append_int(out, local_rank);
  }
  if (local_rank >= 0 || util::env_text("CUDASCOPE_TEST_HOSTNAME")) {
    if (const std::string host = trace_host_name(); !host.empty()) {
      out += ",\"host\":";
      append_json_string(out, host);
    }
  }
  out += '}';
}

// CUDASCOPE_TEST_CLOCK_OFFSET_NS (a test setting, docs/ranks.md): 0 when unset or refused.
std::int64_t test_clock_offset_ns() {
  try {
    return util::env_test_clock_offset_ns().value_or(0);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; ignored\n", e.what());
    return 0;
  }
}

std::string thread_name_of(std::uint32_t pid, std::uint32_t tid) {
  if (pid == static_cast<std::uint32_t>(getpid())) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string name;
    if (std::getline(in, name) && !name.empty()) return name + " (" + std::to_string(tid) + ")";
  }
  return "thread " + std::to_string(tid);
}
}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::unique_ptr<detail::TraceOutput> output) : output_(std::move(output)) {}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (!ended_ && !first_event_) {
    try {
      end({});
    } catch (...) {
    }
  }
}

std::unique_ptr<profiler::TraceSink> open_chrome_trace(const std::string& path) {
  return std::make_unique<ChromeTraceWriter>(detail::TraceOutput::create(path));
}

std::unique_ptr<profiler::TraceSink> create_chrome_trace_in(int directory_fd, const std::string& name,
                                                            const std::string& shown_path) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    throw std::system_error(EINVAL, std::generic_category(), "cannot create '" + shown_path + "': not a file name");
  }
  const int fd = openat(directory_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot create '" + shown_path + "'");
  return std::make_unique<ChromeTraceWriter>(std::make_unique<detail::TraceOutput>(fd, shown_path, name.ends_with(".gz")));
}

template <class Step>
void ChromeTraceWriter::guarded(Step&& step) {
  if (failed_) return;
  try {
    step();
  } catch (const std::exception& e) {
    stop_after_failure(e.what());
  }
}

void ChromeTraceWriter::stop_after_failure(const std::string& error) {
  failed_ = true;
  ended_ = true;
  buffer_.clear();
  events_.store(events_flushed_, std::memory_order_relaxed);
  // No event count: a plain file keeps the events written whole before the error, beyond
  // those of the last flush (trace_output.h).
  std::string tail = "\n],\"cudascopeSummary\":{\"complete\":false,\"error\":";
  append_json_string(tail, error);
  tail += "}}\n";
  const bool closed = output_->close_at_checkpoint(tail);
  throw std::runtime_error(error + (closed ? "; the trace stops at its last whole event, closed there"
                                           : "; the trace stops at its last flush, not closed"));
}

void ChromeTraceWriter::begin(const profiler::TraceInfo& info) {
  if (failed_) return;
  info_ = info;
  pid_ = info.process_id;
  clock_offset_ns_ = test_clock_offset_ns();
  // Flow arrows need the launch calls: only traces recording runtime API calls pair them.
  if (info.activities.find("runtime") != std::string::npos || info.activities.find("launch") != std::string::npos)
    flows_ = std::make_unique<detail::FlowPairing>();
  buffer_ += "{\"schemaVersion\":1,\"traceName\":\"cudascope\",\"displayTimeUnit\":\"ms\",\"cudascope\":{\"source\":";
  append_json_string(buffer_, info.source);
  buffer_ += ",\"activities\":";
  append_json_string(buffer_, info.activities);
  buffer_ += ",\"startNs\":";
  append_int(buffer_, shifted(info.start_ns));
  if (const std::string run = run_id_of_this_process(); !run.empty()) {
    buffer_ += ",\"run\":";
    append_json_string(buffer_, run);
  }
  buffer_ += '}';
  append_distributed_info(buffer_, info);
  buffer_ += ",\"traceEvents\":[";
  common("M", "process_name", nullptr, pid_, 0, info.start_ns);
  buffer_ += ",\"args\":{\"name\":";
  append_json_string(buffer_, info.process_name.empty() ? "host" : info.process_name);
  buffer_ += '}';
  end_event();
  common("M", "process_labels", nullptr, pid_, 0, info.start_ns);
  buffer_ += ",\"args\":{\"labels\":\"CPU\"}";
  end_event();
  last_ts_ns_ = info.start_ns;
  flush();  // a process killed before the first periodic flush still leaves a trace
}

void ChromeTraceWriter::begin_event(const char* ph) {
  buffer_ += first_event_ ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
  buffer_ += ph;
  buffer_ += '"';
  first_event_ = false;
}

void ChromeTraceWriter::end_event() {
  buffer_ += '}';
  events_.fetch_add(1, std::memory_order_relaxed);
}

// ph, name, cat, pid, tid, ts: the fields every event has (the caller adds the rest, then end_event).
void ChromeTraceWriter::common(const char* ph, const std::string& name, const char* cat, std::int64_t pid,
                               std::int64_t tid, std::uint64_t ts_ns) {
  begin_event(ph);
  buffer_ += ",\"name\":";
  append_json_string(buffer_, name);
  if (cat != nullptr) {
    buffer_ += ",\"cat\":\"";
    buffer_ += cat;
    buffer_ += '"';
  }
  buffer_ += ",\"pid\":";
  append_int(buffer_, pid);
  buffer_ += ",\"tid\":";
  append_int(buffer_, tid);
  buffer_ += ",\"ts\":";
  append_us(buffer_, shifted(ts_ns));
}

void ChromeTraceWriter::device_track(int device, std::int64_t stream) {
  if (devices_.insert(device).second) {
    common("M", "process_name", nullptr, device, 0, last_ts_ns_);
    buffer_ += ",\"args\":{\"name\":\"GPU ";
    append_int(buffer_, device);
    buffer_ += "\"}";
    end_event();
    common("M", "process_labels", nullptr, device, 0, last_ts_ns_);
    buffer_ += ",\"args\":{\"labels\":\"GPU ";
    append_int(buffer_, device);
    buffer_ += "\"}";
    end_event();
    common("M", "process_sort_index", nullptr, device, 0, last_ts_ns_);
    buffer_ += ",\"args\":{\"sort_index\":";
    append_int(buffer_, device);
    buffer_ += '}';
    end_event();
  }
  if (stream >= 0 && streams_.emplace(device, stream).second) {
    common("M", "thread_name", nullptr, device, stream, last_ts_ns_);
    buffer_ += ",\"args\":{\"name\":\"stream ";
    append_int(buffer_, stream);
    buffer_ += "\"}";
    end_event();
  }
}

void ChromeTraceWriter::host_thread(std::uint32_t tid) {
  if (!threads_.insert(tid).second) return;
  common("M", "thread_name", nullptr, pid_, tid, last_ts_ns_);
  buffer_ += ",\"args\":{\"name\":";
  append_json_string(buffer_, thread_name_of(static_cast<std::uint32_t>(pid_), tid));
  buffer_ += '}';
  end_event();
}

const std::string& ChromeTraceWriter::demangled(const char* name) {
  auto it = demangled_.find(name);
  if (it != demangled_.end()) return it->second;
  std::string text = name == nullptr ? "unknown kernel" : name;
  if (name != nullptr && std::strncmp(name, "_Z", 2) == 0) {
    int status = 0;
    char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && plain != nullptr) text = plain;
    std::free(plain);
  }
  return demangled_.emplace(name, std::move(text)).first->second;
}

std::uint32_t ChromeTraceWriter::tid_of(const Record& r) const { return r.thread_id == detail::kDeviceSide ? 0 : r.thread_id; }

void ChromeTraceWriter::duration(const Record& r) {
  buffer_ += ",\"dur\":";
  append_us(buffer_, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
}

void ChromeTraceWriter::flow_arrow(const detail::FlowPair& pair) {
  common("s", "ac2g", "ac2g", pid_, pair.host.tid, pair.host.ts);
  buffer_ += ",\"id\":";
  append_int(buffer_, pair.id);
  end_event();
  common("f", "ac2g", "ac2g", pair.device.device, pair.device.stream, pair.device.ts);
  buffer_ += ",\"id\":";
  append_int(buffer_, pair.id);
  buffer_ += ",\"bp\":\"e\"";
  end_event();
}

void ChromeTraceWriter::write(const Record* records, std::size_t count) {
  guarded([&] {
    for (std::size_t i = 0; i < count; ++i) {
      if (records[i].kind == RecordKind::kText) continue;
      write_record(records[i], records + i + 1, count - i - 1);
    }
  });
}

// `next`/`available`: the records after r, where a long NVTX text continues.
void ChromeTraceWriter::write_record(const Record& r, const Record* next, std::size_t available) {
  if (r.start_ns > last_ts_ns_) last_ts_ns_ = r.start_ns;
  switch (r.kind) {
    case RecordKind::kKernel: kernel(r); break;
    case RecordKind::kMemcpy: memcpy(r); break;
    case RecordKind::kMemset: memset(r); break;
    case RecordKind::kSync: sync(r); break;
    case RecordKind::kRuntimeApi:
    case RecordKind::kDriverApi: api_call(r); break;
    case RecordKind::kNvtxPush: nvtx_push(r, next, available); break;
    case RecordKind::kNvtxPop: nvtx_pop(r); break;
    case RecordKind::kNvtxMark: nvtx_mark(r, next, available); break;
    case RecordKind::kNvtxRangeStart: nvtx_range_start(r, next, available); break;
    case RecordKind::kNvtxRangeEnd: nvtx_range_end(r); break;
    case RecordKind::kAllocator: allocator(r); break;
    case RecordKind::kDeviceMemory: device_memory(r); break;
    case RecordKind::kEventTiming: event_timing(r); break;
    case RecordKind::kOverhead: overhead(r); break;
    case RecordKind::kDevice: device_info(r); break;
    case RecordKind::kStream: stream_info(r); break;
    case RecordKind::kExternalCorrelation: external_correlation(r); break;
    case RecordKind::kThreadName: thread_name(r); break;
    case RecordKind::kDropped: dropped(r); break;
    case RecordKind::kContext:
    case RecordKind::kText: break;
  }
  if (buffer_.size() > (4u << 20)) {
    output_->write(buffer_);
    buffer_.clear();
  }
}

void ChromeTraceWriter::flush() {
  guarded([&] {
    output_->write(buffer_);
    buffer_.clear();
    output_->checkpoint();
    events_flushed_ = events_.load(std::memory_order_relaxed);
  });
}

void ChromeTraceWriter::end(const profiler::TraceSummary& summary) {
  if (ended_ || failed_) return;
  ended_ = true;
  const std::uint64_t end_ns = summary.end_ns > last_ts_ns_ ? summary.end_ns : last_ts_ns_;
  // Ranges still open when recording stopped end there, so every "B" has its "E".
  for (auto& [tid, stack] : open_ranges_) {
    while (!stack.empty()) {
      common("E", stack.back(), "nvtx", pid_, tid, end_ns);
      end_event();
      stack.pop_back();
    }
  }
  for (auto& [id, name] : open_async_) {
    common("e", name, "nvtx", pid_, 0, end_ns);
    buffer_ += ",\"id\":";
    append_int(buffer_, id);
    end_event();
  }
  open_async_.clear();
  buffer_ += "\n],\"deviceProperties\":[";
  bool first = true;
  for (const auto& [device, r] : device_info_) {
    if (!first) buffer_ += ',';
    first = false;
    buffer_ += "{\"id\":";
    append_int(buffer_, device);
    buffer_ += ",\"name\":";
    append_json_string(buffer_, r.u.device_info.name != nullptr ? r.u.device_info.name : "");
    buffer_ += ",\"totalGlobalMem\":";
    append_int(buffer_, r.u.device_info.total_memory);
    buffer_ += ",\"computeMajor\":";
    append_int(buffer_, r.u.device_info.major);
    buffer_ += ",\"computeMinor\":";
    append_int(buffer_, r.u.device_info.minor);
    buffer_ += ",\"numSms\":";
    append_int(buffer_, r.u.device_info.multiprocessors);
    buffer_ += '}';
  }
  buffer_ += "],\"cudascopeSummary\":{\"records\":";
  append_int(buffer_, summary.records);
  buffer_ += ",\"events\":";
  append_int(buffer_, events_.load());
  buffer_ += ",\"dropped\":{\"buffer\":";
  append_int(buffer_, summary.dropped_buffer);
  buffer_ += ",\"cupti\":";
  append_int(buffer_, summary.dropped_cupti);
  buffer_ += "},\"complete\":true}}\n";
  guarded([&] {
    output_->close(buffer_);
    buffer_.clear();
  });
}

}  // namespace cudascope::exporters
