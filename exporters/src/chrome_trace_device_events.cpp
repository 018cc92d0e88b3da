// The trace events of device-side records: kernels, copies, fills, syncs, memory
// counters, CUPTI overhead, and the device and stream metadata.
#include <cudascope/exporters/chrome_trace_writer.h>

#include <cudascope/util/communication_kernel.h>

#include "chrome_trace_common.h"
#include "flow_pairing.h"

#include <string>

namespace cudascope::exporters {
using detail::append_int;
using detail::append_json_string;
using profiler::Record;

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
  duration(r);
  device_args(r);
  if (auto it = external_ids_.find(r.correlation_id); it != external_ids_.end()) {
    buffer_ += ",\"External id\":";
    append_int(buffer_, it->second);
  }
  if (k.graph_id != 0) {
    buffer_ += ",\"graph id\":";
    append_int(buffer_, k.graph_id);
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
  buffer_ += ']';
  communication_args(demangled(k.name));
  buffer_ += '}';
  end_event();
  flow_device(r);
}

// NCCL's kernels carry "communication":true and the collective, which the analysis reads
// (util/communication_kernel.h); Kineto's cat "kernel" stays, so every tool still sees a kernel.
void ChromeTraceWriter::communication_args(const std::string& name) {
  if (!util::is_communication_kernel(name)) return;
  buffer_ += ",\"communication\":true";
  const std::string_view collective = util::collective_of(name);
  if (collective.empty()) return;
  buffer_ += ",\"collective\":";
  append_json_string(buffer_, std::string(collective));
}

void ChromeTraceWriter::memcpy(const Record& r) {
  device_track(r.device, r.stream);
  const auto code = static_cast<profiler::CopyKindCode>(r.detail);
  common("X", std::string("Memcpy ") + profiler::to_string(code), "gpu_memcpy", r.device, r.stream, r.start_ns);
  duration(r);
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
}

void ChromeTraceWriter::memset(const Record& r) {
  device_track(r.device, r.stream);
  common("X", "Memset (Device)", "gpu_memset", r.device, r.stream, r.start_ns);
  duration(r);
  device_args(r);
  buffer_ += ",\"bytes\":";
  append_int(buffer_, r.u.memset.bytes);
  buffer_ += ",\"value\":";
  append_int(buffer_, r.u.memset.value);
  buffer_ += '}';
  end_event();
  flow_device(r);
}

void ChromeTraceWriter::sync(const Record& r) {
  // Kineto's placement: on the device, on the stream synchronised (tid 0: the whole device).
  const std::int64_t track = r.stream >= 0 ? r.stream : 0;
  device_track(r.device, track);
  common("X", profiler::to_string(static_cast<profiler::SyncType>(r.detail)), "cuda_sync", r.device, track, r.start_ns);
  duration(r);
  device_args(r);
  buffer_ += '}';
  end_event();
}

void ChromeTraceWriter::allocator(const Record& r) {
  device_track(r.device, -1);
  const auto action = static_cast<profiler::AllocatorAction>(r.detail);
  common("C", "Device Memory", nullptr, r.device, 0, r.start_ns);
  buffer_ += ",\"args\":{\"allocated\":";
  append_int(buffer_, r.u.allocator.allocated_bytes);
  buffer_ += ",\"reserved\":";
  append_int(buffer_, r.u.allocator.reserved_bytes);
  buffer_ += '}';
  end_event();
  const auto& pool = r.u.allocator.graph_pool;
  if ((pool[0] != 0 || pool[1] != 0) &&
      (action == profiler::AllocatorAction::kAlloc || action == profiler::AllocatorAction::kSegmentAlloc)) {
    // Allocations into a CUDA graph's private pool (during its capture): marked on the
    // memory track with the pool, as memory_snapshot names it (segment_pool_id).
    common("i", action == profiler::AllocatorAction::kAlloc ? "Graph pool alloc" : "Graph pool segment", "cuda_memory",
           r.device, 0, r.start_ns);
    buffer_ += ",\"s\":\"p\",\"args\":{\"pool\":[";
    append_int(buffer_, static_cast<std::int64_t>(pool[0]));
    buffer_ += ',';
    append_int(buffer_, static_cast<std::int64_t>(pool[1]));
    buffer_ += "],\"bytes\":";
    append_int(buffer_, r.u.allocator.size);
    buffer_ += '}';
    end_event();
  }
  if (action == profiler::AllocatorAction::kOom) {
    common("i", "Out of memory", "cuda_memory", r.device, 0, r.start_ns);
    buffer_ += ",\"s\":\"p\",\"args\":{\"bytes\":";
    append_int(buffer_, r.u.allocator.size);
    buffer_ += '}';
    end_event();
  }
}

// What the process holds on the device after each cudaMalloc/cudaFree (or the driver's
// equivalents), whatever allocator made the call: a counter track beside the allocator's.
void ChromeTraceWriter::device_memory(const Record& r) {
  device_track(r.device, -1);
  common("C", "Device Memory Held", nullptr, r.device, 0, r.start_ns);
  buffer_ += ",\"args\":{\"bytes\":";
  append_int(buffer_, static_cast<std::int64_t>(r.u.device_memory.held_bytes));
  buffer_ += '}';
  end_event();
}

// Event::elapsed_time's span: a complete event on the start event's stream row, named after
// the start event.
void ChromeTraceWriter::event_timing(const Record& r) {
  device_track(r.device, r.stream);
  const char* name = r.u.event_timing.name != nullptr ? r.u.event_timing.name : "event timing";
  common("X", name, "event_timing", r.device, r.stream, r.start_ns);
  duration(r);
  buffer_ += ",\"args\":{\"device\":";
  append_int(buffer_, r.device);
  buffer_ += ",\"stream\":";
  append_int(buffer_, r.stream);
  buffer_ += '}';
  end_event();
}

void ChromeTraceWriter::overhead(const Record& r) {
  const bool on_thread = r.thread_id != detail::kDeviceSide;
  if (on_thread) host_thread(r.thread_id);
  const std::int64_t pid = on_thread ? pid_ : r.device;
  if (!on_thread) device_track(r.device, -1);
  common("X", std::string("CUPTI overhead: ") + (r.u.overhead.name ? r.u.overhead.name : "?"), "overhead", pid,
         on_thread ? r.thread_id : 0, r.start_ns);
  duration(r);
  end_event();
}

// Kept for the deviceProperties written at the end.
void ChromeTraceWriter::device_info(const Record& r) {
  device_info_[r.device] = r;
  device_track(r.device, -1);
}

void ChromeTraceWriter::stream_info(const Record& r) {
  if (r.device >= 0) device_track(r.device, r.stream);
}

void ChromeTraceWriter::flow_device(const Record& r) {
  if (!flows_ || r.correlation_id == 0) return;
  if (auto pair = flows_->on_device(r.correlation_id, {r.device, r.stream, r.start_ns})) flow_arrow(*pair);
}

}  // namespace cudascope::exporters
