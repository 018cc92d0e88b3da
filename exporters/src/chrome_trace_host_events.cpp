// The trace events of host-side records: API calls, NVTX ranges and marks, thread names,
// dropped-record counters, and the external ids that tie launches to framework ops.
#include <cudascope/exporters/chrome_trace_writer.h>

#include "chrome_trace_common.h"
#include "flow_pairing.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace cudascope::exporters {
using detail::append_int;
using detail::append_json_string;
using profiler::Record;
using profiler::RecordKind;

namespace {

std::string color_text(std::uint32_t argb) {
  char text[16];
  std::snprintf(text, sizeof text, "#%06x", argb & 0xffffffu);
  return text;
}

const char* domain_name(std::int64_t domain) {
  return domain == 0 ? nullptr : reinterpret_cast<const char*>(static_cast<std::intptr_t>(domain));
}
}  // namespace

void ChromeTraceWriter::api_call(const Record& r) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  common("X", r.u.api.name != nullptr ? r.u.api.name : "cuda api",
         r.kind == RecordKind::kRuntimeApi ? "cuda_runtime" : "cuda_driver", pid_, tid, r.start_ns);
  duration(r);
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
}

void ChromeTraceWriter::flow_api(const Record& r) {
  if (!flows_ || r.correlation_id == 0) return;
  if (auto pair = flows_->on_api(r.correlation_id, r.u.api.name, {tid_of(r), r.start_ns})) flow_arrow(*pair);
}

// The args of an NVTX event: domain, category, colour, payload, and whether the text was cut.
void ChromeTraceWriter::nvtx_args(const Record& r) {
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
}

void ChromeTraceWriter::nvtx_push(const Record& r, const Record* next, std::size_t available) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  std::string name = profiler::record_text(r, next, available);
  common("B", name, "nvtx", pid_, tid, r.start_ns);
  nvtx_args(r);
  end_event();
  open_ranges_[tid].push_back(std::move(name));
}

void ChromeTraceWriter::nvtx_pop(const Record& r) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  auto& stack = open_ranges_[tid];
  if (stack.empty()) return;  // a pop of a range pushed before recording started
  common("E", stack.back(), "nvtx", pid_, tid, r.start_ns);
  end_event();
  stack.pop_back();
}

void ChromeTraceWriter::nvtx_mark(const Record& r, const Record* next, std::size_t available) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  common("i", profiler::record_text(r, next, available), "nvtx", pid_, tid, r.start_ns);
  buffer_ += ",\"s\":\"t\"";
  nvtx_args(r);
  end_event();
}

void ChromeTraceWriter::nvtx_range_start(const Record& r, const Record* next, std::size_t available) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  std::string name = profiler::record_text(r, next, available);
  common("b", name, "nvtx", pid_, tid, r.start_ns);
  buffer_ += ",\"id\":";
  append_int(buffer_, r.stream);
  nvtx_args(r);
  end_event();
  open_async_[static_cast<std::uint64_t>(r.stream)] = std::move(name);
}

void ChromeTraceWriter::nvtx_range_end(const Record& r) {
  const std::uint32_t tid = tid_of(r);
  host_thread(tid);
  auto it = open_async_.find(static_cast<std::uint64_t>(r.stream));
  if (it == open_async_.end()) return;
  common("e", it->second, "nvtx", pid_, tid, r.start_ns);
  buffer_ += ",\"id\":";
  append_int(buffer_, r.stream);
  end_event();
  open_async_.erase(it);
}

void ChromeTraceWriter::external_correlation(const Record& r) {
  if (external_ids_.size() >= detail::kMaxExternalIds) external_ids_.clear();
  external_ids_[r.correlation_id] = r.u.external.external_id;
}

void ChromeTraceWriter::thread_name(const Record& r) {
  threads_.insert(r.thread_id);
  common("M", "thread_name", nullptr, pid_, r.thread_id, r.start_ns);
  buffer_ += ",\"args\":{\"name\":";
  append_json_string(buffer_, r.u.thread_name.name != nullptr ? r.u.thread_name.name : "");
  buffer_ += '}';
  end_event();
}

void ChromeTraceWriter::dropped(const Record& r) {
  common("C", "cudascope dropped records", nullptr, pid_, 0, r.start_ns);
  buffer_ += ",\"args\":{";
  buffer_ += r.detail == static_cast<std::uint8_t>(profiler::DropSource::kCupti) ? "\"cupti\":" : "\"buffer\":";
  append_int(buffer_, r.u.dropped.total);
  buffer_ += '}';
  end_event();
}

}  // namespace cudascope::exporters
