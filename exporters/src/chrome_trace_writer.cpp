#include <cudascope/exporters/chrome_trace_writer.h>

#include "json_text.h"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace cudascope::exporters {
using detail::append_json_string;
using detail::append_int;
using detail::append_us;
using profiler::Record;
using profiler::RecordKind;

namespace {
// Unmatched flow ends are forgotten beyond this many (a launch whose kernel never came).
constexpr std::size_t kMaxPendingFlows = 1u << 20;
constexpr std::uint32_t kDeviceSide = ~0u;

std::string thread_name_of(std::uint32_t pid, std::uint32_t tid) {
  if (pid == static_cast<std::uint32_t>(getpid())) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string name;
    if (std::getline(in, name) && !name.empty()) return name + " (" + std::to_string(tid) + ")";
  }
  return "thread " + std::to_string(tid);
}

std::string color_text(std::uint32_t argb) {
  char text[16];
  std::snprintf(text, sizeof text, "#%06x", argb & 0xffffffu);
  return text;
}

const char* domain_name(std::int64_t domain) {
  return domain == 0 ? nullptr : reinterpret_cast<const char*>(static_cast<std::intptr_t>(domain));
}
}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::unique_ptr<TraceOutput> output) : output_(std::move(output)) {}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (!ended_ && !first_event_) {
    try {
      end({});
    } catch (...) {
    }
  }
}

std::unique_ptr<profiler::TraceSink> open_chrome_trace(const std::string& path) {
  return std::make_unique<ChromeTraceWriter>(std::make_unique<TraceOutput>(path));
}

void ChromeTraceWriter::begin(const profiler::TraceInfo& info) {
  info_ = info;
  pid_ = info.process_id;
  flows_ = info.activities.find("runtime") != std::string::npos || info.activities.find("launch") != std::string::npos;
  buffer_ += "{\"schemaVersion\":1,\"traceName\":\"cudascope\",\"displayTimeUnit\":\"ms\",\"cudascope\":{\"source\":";
  append_json_string(buffer_, info.source);
  buffer_ += ",\"activities\":";
  append_json_string(buffer_, info.activities);
  buffer_ += ",\"startNs\":";
  append_int(buffer_, info.start_ns);
  buffer_ += '}';
  if (info.rank >= 0) {
    buffer_ += ",\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":";
    append_int(buffer_, info.rank);
    buffer_ += ",\"world_size\":";
    append_int(buffer_, info.world_size >= 0 ? info.world_size : 1);
    buffer_ += '}';
  }
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
  append_us(buffer_, ts_ns);
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

std::uint32_t ChromeTraceWriter::tid_of(const Record& r) const { return r.thread_id == kDeviceSide ? 0 : r.thread_id; }

void ChromeTraceWriter::flow_pair(std::uint32_t id, const HostPoint& host, const DevicePoint& device) {
  common("s", "ac2g", "ac2g", pid_, host.tid, host.ts);
  buffer_ += ",\"id\":";
  append_int(buffer_, id);
  end_event();
  common("f", "ac2g", "ac2g", device.device, device.stream, device.ts);
  buffer_ += ",\"id\":";
  append_int(buffer_, id);
  buffer_ += ",\"bp\":\"e\"";
  end_event();
}

void ChromeTraceWriter::flow_api(const Record& r) {
  if (!flows_ || r.correlation_id == 0) return;
  const HostPoint host{tid_of(r), r.start_ns};
  if (auto it = pending_device_.find(r.correlation_id); it != pending_device_.end()) {
    flow_pair(r.correlation_id, host, it->second);
    pending_device_.erase(it);
    return;
  }
  // Only calls that put work on a stream can have a device end.
  const char* name = r.u.api.name;
  if (name == nullptr || !(std::strstr(name, "Launch") || std::strstr(name, "Memcpy") || std::strstr(name, "Memset"))) return;
  if (pending_api_.size() >= kMaxPendingFlows) pending_api_.clear();
  pending_api_[r.correlation_id] = host;
}

void ChromeTraceWriter::flow_device(const Record& r) {
  if (!flows_ || r.correlation_id == 0) return;
  const DevicePoint device{r.device, r.stream, r.start_ns};
  if (auto it = pending_api_.find(r.correlation_id); it != pending_api_.end()) {
    flow_pair(r.correlation_id, it->second, device);
    pending_api_.erase(it);
    return;
  }
  if (pending_device_.size() >= kMaxPendingFlows) pending_device_.clear();
  pending_device_.emplace(r.correlation_id, device);  // a graph's later kernels share the id: first one wins
}

// Opens the args every device activity carries: where it ran and the launch it belongs to.
void ChromeTraceWriter::device_args(const Record& r) {
  buffer_ += ",\"args\":{\"device\":";
  append_int(buffer_, r.device);
  buffer_ += ",\"stream\":";
  append_int(buffer_, r.stream);
  buffer_ += ",\"correlation\":";
  append_int(buffer_, r.correlation_id);
}

void ChromeTraceWriter::kernel(const Record& r) {
  device_track(r.device, r.stream);
  const auto& k = r.u.kernel;
  common("X", demangled(k.name), "kernel", r.device, r.stream, r.start_ns);
  buffer_ += ",\"dur\":";
  append_us(buffer_, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
  device_args(r);
  if (auto it = external_ids_.find(r.correlation_id); it != external_ids_.end()) {
    buffer_ += ",\"External id\":";
    append_int(buffer_, it->second);
  }
  buffer_ += ",\"registers per thread\":";
  append_int(buffer_, k.registers_per_thread);
  buffer_ += ",\"shared memory\":";
  append_int(buffer_, k.static_shared_memory + k.dynamic_shared_memory);
  buffer_ += ",\"grid\":[";
  append_int(buffer_, k.grid[0]);
  buffer_ += ',';
  append_int(buffer_, k.grid[1]);
  buffer_ += ',';
  append_int(buffer_, k.grid[2]);
  buffer_ += "],\"block\":[";
  append_int(buffer_, k.block[0]);
  buffer_ += ',';
  append_int(buffer_, k.block[1]);
  buffer_ += ',';
  append_int(buffer_, k.block[2]);
  buffer_ += "]}";
  end_event();
  flow_device(r);
}

void ChromeTraceWriter::nvtx(const Record& r, const Record* next, std::size_t available) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  const auto args = [&] {
    buffer_ += ",\"args\":{";
    bool any = false;
    const auto sep = [&] {
      if (any) buffer_ += ',';
      any = true;
    };
    if (const char* domain = r.kind == RecordKind::kNvtxRangeStart ? nullptr : domain_name(r.stream)) {
      sep();
      buffer_ += "\"domain\":";
      append_json_string(buffer_, domain);
    }
    if (r.u.nvtx.category != 0) {
      sep();
      buffer_ += "\"category\":";
      append_int(buffer_, r.u.nvtx.category);
    }
    if (r.u.nvtx.has_color) {
      sep();
      buffer_ += "\"color\":";
      append_json_string(buffer_, color_text(r.u.nvtx.color));
    }
    const std::uint64_t bits = r.u.nvtx.payload;
    switch (r.u.nvtx.payload_kind) {
      case profiler::NvtxPayloadKind::kNone: break;
      case profiler::NvtxPayloadKind::kUint64:
      case profiler::NvtxPayloadKind::kUint32: sep(); buffer_ += "\"payload\":"; append_int(buffer_, bits); break;
      case profiler::NvtxPayloadKind::kInt64: sep(); buffer_ += "\"payload\":"; append_int(buffer_, static_cast<std::int64_t>(bits)); break;
      case profiler::NvtxPayloadKind::kInt32: sep(); buffer_ += "\"payload\":"; append_int(buffer_, static_cast<std::int32_t>(bits)); break;
      case profiler::NvtxPayloadKind::kDouble:
      case profiler::NvtxPayloadKind::kFloat: {
        double value = 0;
        if (r.u.nvtx.payload_kind == profiler::NvtxPayloadKind::kDouble) {
          std::memcpy(&value, &bits, 8);
        } else {
          float f = 0;
          std::memcpy(&f, &bits, 4);
          value = f;
        }
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", value);
        sep();
        buffer_ += "\"payload\":";
        buffer_ += text;
        break;
      }
    }
    if (r.u.nvtx.truncated) {
      sep();
      buffer_ += "\"truncated\":true";
    }
    buffer_ += '}';
  };
  switch (r.kind) {
    case RecordKind::kNvtxPush: {
      std::string name = profiler::record_text(r, next, available);
      common("B", name, "nvtx", pid_, tid, r.start_ns);
      args();
      end_event();
      open_ranges_[tid].push_back(std::move(name));
      break;
    }
    case RecordKind::kNvtxPop: {
      auto& stack = open_ranges_[tid];
      if (stack.empty()) break;  // a pop of a range pushed before recording started
      common("E", stack.back(), "nvtx", pid_, tid, r.start_ns);
      end_event();
      stack.pop_back();
      break;
    }
    case RecordKind::kNvtxMark:
      common("i", profiler::record_text(r, next, available), "nvtx", pid_, tid, r.start_ns);
      buffer_ += ",\"s\":\"t\"";
      args();
      end_event();
      break;
    case RecordKind::kNvtxRangeStart: {
      std::string name = profiler::record_text(r, next, available);
      common("b", name, "nvtx", pid_, tid, r.start_ns);
      buffer_ += ",\"id\":";
      append_int(buffer_, r.stream);
      args();
      end_event();
      open_async_[static_cast<std::uint64_t>(r.stream)] = std::move(name);
      break;
    }
    case RecordKind::kNvtxRangeEnd: {
      auto it = open_async_.find(static_cast<std::uint64_t>(r.stream));
      if (it == open_async_.end()) break;
      common("e", it->second, "nvtx", pid_, tid, r.start_ns);
      buffer_ += ",\"id\":";
      append_int(buffer_, r.stream);
      end_event();
      open_async_.erase(it);
      break;
    }
    default: break;
  }
}

void ChromeTraceWriter::write(const Record* records, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (records[i].kind == RecordKind::kText) continue;
    write_record(records[i], records + i + 1, count - i - 1);
  }
}

void ChromeTraceWriter::write_record(const Record& r, const Record* next, std::size_t available) {
  if (r.start_ns > last_ts_ns_) last_ts_ns_ = r.start_ns;
  const auto duration = [&] {
    buffer_ += ",\"dur\":";
    append_us(buffer_, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
  };
  switch (r.kind) {
    case RecordKind::kKernel: kernel(r); break;
    case RecordKind::kMemcpy: {
      device_track(r.device, r.stream);
      const auto code = static_cast<profiler::CopyKindCode>(r.detail);
      common("X", std::string("Memcpy ") + profiler::to_string(code), "gpu_memcpy", r.device, r.stream, r.start_ns);
      duration();
      device_args(r);
      buffer_ += ",\"bytes\":";
      append_int(buffer_, r.u.copy.bytes);
      buffer_ += ",\"kind\":\"";
      buffer_ += profiler::to_string(code);
      buffer_ += "\",\"src device\":";
      append_int(buffer_, r.u.copy.src_device);
      buffer_ += ",\"dst device\":";
      append_int(buffer_, r.u.copy.dst_device);
      buffer_ += '}';
      end_event();
      flow_device(r);
      break;
    }
    case RecordKind::kMemset:
      device_track(r.device, r.stream);
      common("X", "Memset (Device)", "gpu_memset", r.device, r.stream, r.start_ns);
      duration();
      device_args(r);
      buffer_ += ",\"bytes\":";
      append_int(buffer_, r.u.memset.bytes);
      buffer_ += ",\"value\":";
      append_int(buffer_, r.u.memset.value);
      buffer_ += '}';
      end_event();
      flow_device(r);
      break;
    case RecordKind::kSync: {
      // Kineto's placement: on the device, on the stream synchronised (tid 0: the whole device).
      const std::int64_t track = r.stream >= 0 ? r.stream : 0;
      device_track(r.device, track);
      common("X", profiler::to_string(static_cast<profiler::SyncType>(r.detail)), "cuda_sync", r.device, track, r.start_ns);
      duration();
      device_args(r);
      buffer_ += '}';
      end_event();
      break;
    }
    case RecordKind::kRuntimeApi:
    case RecordKind::kDriverApi: {
      const std::uint32_t tid = tid_of(r);
      host_thread(tid);
      common("X", r.u.api.name != nullptr ? r.u.api.name : "cuda api",
             r.kind == RecordKind::kRuntimeApi ? "cuda_runtime" : "cuda_driver", pid_, tid, r.start_ns);
      duration();
      buffer_ += ",\"args\":{\"correlation\":";
      append_int(buffer_, r.correlation_id);
      if (r.u.api.callback_id != 0) {
        buffer_ += ",\"cbid\":";
        append_int(buffer_, r.u.api.callback_id);
      }
      if (auto it = external_ids_.find(r.correlation_id); it != external_ids_.end()) {
        buffer_ += ",\"External id\":";
        append_int(buffer_, it->second);
      }
      buffer_ += '}';
      end_event();
      if (r.kind == RecordKind::kRuntimeApi) flow_api(r);
      break;
    }
    case RecordKind::kNvtxPush:
    case RecordKind::kNvtxPop:
    case RecordKind::kNvtxMark:
    case RecordKind::kNvtxRangeStart:
    case RecordKind::kNvtxRangeEnd: nvtx(r, next, available); break;
    case RecordKind::kAllocator: {
      device_track(r.device, -1);
      const auto action = static_cast<profiler::AllocatorAction>(r.detail);
      common("C", "Device Memory", nullptr, r.device, 0, r.start_ns);
      buffer_ += ",\"args\":{\"allocated\":";
      append_int(buffer_, r.u.allocator.allocated_bytes);
      buffer_ += ",\"reserved\":";
      append_int(buffer_, r.u.allocator.reserved_bytes);
      buffer_ += '}';
      end_event();
      if (action == profiler::AllocatorAction::kOom) {
        common("i", "Out of memory", "cuda_memory", r.device, 0, r.start_ns);
        buffer_ += ",\"s\":\"p\",\"args\":{\"bytes\":";
        append_int(buffer_, r.u.allocator.size);
        buffer_ += '}';
        end_event();
      }
      break;
    }
    case RecordKind::kOverhead: {
      const bool on_thread = r.thread_id != kDeviceSide;
      if (on_thread) host_thread(r.thread_id);
      const std::int64_t pid = on_thread ? pid_ : r.device;
      if (!on_thread) device_track(r.device, -1);
      common("X", std::string("CUPTI overhead: ") + (r.u.overhead.name ? r.u.overhead.name : "?"), "overhead", pid,
             on_thread ? r.thread_id : 0, r.start_ns);
      duration();
      end_event();
      break;
    }
    case RecordKind::kDevice:
      device_info_[r.device] = r;
      device_track(r.device, -1);
      break;
    case RecordKind::kStream:
      if (r.device >= 0) device_track(r.device, r.stream);
      break;
    case RecordKind::kExternalCorrelation:
      if (external_ids_.size() >= kMaxPendingFlows) external_ids_.clear();
      external_ids_[r.correlation_id] = r.u.external.external_id;
      break;
    case RecordKind::kThreadName:
      threads_.insert(r.thread_id);
      common("M", "thread_name", nullptr, pid_, r.thread_id, r.start_ns);
      buffer_ += ",\"args\":{\"name\":";
      append_json_string(buffer_, r.u.thread_name.name != nullptr ? r.u.thread_name.name : "");
      buffer_ += '}';
      end_event();
      break;
    case RecordKind::kDropped:
      common("C", "cudascope dropped records", nullptr, pid_, 0, r.start_ns);
      buffer_ += ",\"args\":{";
      buffer_ += r.detail == static_cast<std::uint8_t>(profiler::DropSource::kCupti) ? "\"cupti\":" : "\"buffer\":";
      append_int(buffer_, r.u.dropped.total);
      buffer_ += '}';
      end_event();
      break;
    case RecordKind::kContext:
    case RecordKind::kText: break;
  }
  if (buffer_.size() > (4u << 20)) {
    output_->write(buffer_);
    buffer_.clear();
  }
}

void ChromeTraceWriter::flush() {
  output_->write(buffer_);
  buffer_.clear();
  output_->flush();
}

void ChromeTraceWriter::end(const profiler::TraceSummary& summary) {
  if (ended_) return;
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
  flush();
  output_->close();
}

}  // namespace cudascope::exporters
