#include <cudascope/profiler/cupti_decoder.h>
#include <cudascope/profiler/strings.h>

#include "cupti_records.h"
#include "nvtx_emit.h"

#include <cupti.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace cudascope::profiler {
namespace {

CopyKindCode copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return CopyKindCode::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return CopyKindCode::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKindCode::kHtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKindCode::kAtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return CopyKindCode::kAtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return CopyKindCode::kAtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKindCode::kDtoA;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return CopyKindCode::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKindCode::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKindCode::kPtoP;
    default: return CopyKindCode::kUnknown;
  }
}

SyncType sync_type(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return SyncType::kEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return SyncType::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return SyncType::kStream;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return SyncType::kContext;
    default: return SyncType::kUnknown;
  }
}

// The kinds since CUDA 12 by value (CUPTI_ACTIVITY_OVERHEAD_*), so that an older CUPTI's
// header builds too: a trace then names where CUPTI spent the launching thread's time.
const char* overhead_name(CUpti_ActivityOverheadKind kind) {
  switch (static_cast<std::uint32_t>(kind)) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    case 4u << 16: return "runtime-triggered module loading";
    case 5u << 16: return "lazy function loading";
    case 6u << 16: return "command buffer full";
    case 7u << 16: return "activity buffer request";
    case 8u << 16: return "unified memory activity init";
    default: return "overhead";
  }
}

// The fields CUPTI's kernel, copy and fill records share.
template <typename Activity>
Record device_activity(RecordKind kind, const Activity& a) {
  return make_device_record(kind, static_cast<std::int32_t>(a.deviceId), a.streamId, a.start, a.end, a.correlationId);
}

// Device of a CUPTI context, from the context records seen so far.
using ContextDevices = std::unordered_map<std::uint32_t, int>;
int device_of(const ContextDevices& devices, std::uint32_t context_id, int unknown) {
  const auto it = devices.find(context_id);
  return it == devices.end() ? unknown : it->second;
}

// One function per CUPTI record kind, each turning the record into ours.

Record kernel(const detail::CuptiKernelRecord& k) {
  Record r = device_activity(RecordKind::kKernel, k);
  r.u.kernel.name = k.name;
  r.u.kernel.grid[0] = k.gridX;
  r.u.kernel.grid[1] = k.gridY;
  r.u.kernel.grid[2] = k.gridZ;
  r.u.kernel.block[0] = k.blockX;
  r.u.kernel.block[1] = k.blockY;
  r.u.kernel.block[2] = k.blockZ;
  r.u.kernel.registers_per_thread = k.registersPerThread;
  r.u.kernel.static_shared_memory = k.staticSharedMemory;
  r.u.kernel.dynamic_shared_memory = k.dynamicSharedMemory;
  r.u.kernel.graph_id = k.graphId;
  return r;
}

Record memcpy_record(const CUpti_ActivityMemcpy6& m) {
  Record r = device_activity(RecordKind::kMemcpy, m);
  const CopyKindCode code = copy_kind(m.copyKind);
  r.detail = static_cast<std::uint8_t>(code);
  const bool from_device = code == CopyKindCode::kDtoH || code == CopyKindCode::kDtoD;
  const bool to_device = code == CopyKindCode::kHtoD || code == CopyKindCode::kDtoD;
  r.u.copy = {m.bytes, from_device ? r.device : -1, to_device ? r.device : -1};
  return r;
}

Record peer_copy(const CUpti_ActivityMemcpyPtoP4& m) {
  Record r = device_activity(RecordKind::kMemcpy, m);
  r.detail = static_cast<std::uint8_t>(CopyKindCode::kPtoP);
  r.u.copy = {m.bytes, static_cast<std::int32_t>(m.srcDeviceId), static_cast<std::int32_t>(m.dstDeviceId)};
  return r;
}

Record memset_record(const CUpti_ActivityMemset4& m) {
  Record r = device_activity(RecordKind::kMemset, m);
  r.u.memset = {m.bytes, m.value};
  return r;
}

Record synchronization(const CUpti_ActivitySynchronization2& s, const ContextDevices& devices) {
  Record r = make_record(RecordKind::kSync);
  r.detail = static_cast<std::uint8_t>(sync_type(s.type));
  r.device = device_of(devices, s.contextId, 0);
  r.stream = s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : static_cast<std::int64_t>(s.streamId);
  r.start_ns = s.start;
  r.end_ns = s.end;
  r.correlation_id = s.correlationId;
  r.thread_id = ~0u;
  return r;
}

Record api_call(const CUpti_ActivityAPI& a, bool runtime, const char* name) {
  Record r = make_record(runtime ? RecordKind::kRuntimeApi : RecordKind::kDriverApi);
  r.start_ns = a.start;
  r.end_ns = a.end;
  r.correlation_id = a.correlationId;
  r.thread_id = a.threadId;
  r.u.api = {name, a.cbid, static_cast<std::int32_t>(a.returnValue), a.processId};
  return r;
}

Record marker(const CUpti_ActivityMarker2& m) {
  const bool start = (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
  const bool instant = (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0;
  const RecordKind kind = instant ? RecordKind::kNvtxMark : start ? RecordKind::kNvtxRangeStart : RecordKind::kNvtxRangeEnd;
  Record r = make_record(kind);
  r.start_ns = r.end_ns = m.timestamp;
  r.stream = instant ? 0 : static_cast<std::int64_t>(m.id);
  if (m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    r.thread_id = m.objectId.pt.threadId;
  }
  if (instant && m.domain != nullptr && *m.domain != '\0') {
    r.stream = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(intern(m.domain)));
  }
  if (kind != RecordKind::kNvtxRangeEnd && m.name != nullptr) {
    // CUPTI owns the name only for the buffer's lifetime: keep a copy in the record.
    const std::string_view name(m.name);
    const std::size_t length = std::min(name.size(), NvtxPayload::kInlineText);
    std::memcpy(r.u.nvtx.text, name.data(), length);
    r.text_size = static_cast<std::uint16_t>(length);
    r.u.nvtx.truncated = length < name.size();
  }
  return r;
}

// Marker data carries attributes of the marker record with the same id, which CUPTI
// writes just after it; applied to that record (range ends have none).
void apply_marker_data(const CUpti_ActivityMarkerData2& d, Record& r) {
  r.u.nvtx.category = d.category;
  r.u.nvtx.color = d.color;
  r.u.nvtx.has_color = (d.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) != 0;
  switch (d.payloadKind) {
    case CUPTI_METRIC_VALUE_KIND_UINT64:
      r.u.nvtx.payload_kind = NvtxPayloadKind::kUint64;
      r.u.nvtx.payload = d.payload.metricValueUint64;
      break;
    case CUPTI_METRIC_VALUE_KIND_INT64:
      r.u.nvtx.payload_kind = NvtxPayloadKind::kInt64;
      std::memcpy(&r.u.nvtx.payload, &d.payload.metricValueInt64, 8);
      break;
    case CUPTI_METRIC_VALUE_KIND_DOUBLE:
      r.u.nvtx.payload_kind = NvtxPayloadKind::kDouble;
      std::memcpy(&r.u.nvtx.payload, &d.payload.metricValueDouble, 8);
      break;
    default: break;
  }
}

Record overhead(const CUpti_ActivityOverhead3& o) {
  Record r = make_record(RecordKind::kOverhead);
  r.detail = static_cast<std::uint8_t>(o.overheadKind);
  r.start_ns = o.start;
  r.end_ns = o.end;
  r.correlation_id = o.correlationId;
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
    r.thread_id = o.objectId.pt.threadId;
    r.u.overhead.object_id = o.objectId.pt.threadId;
  } else {
    r.device = static_cast<std::int32_t>(o.objectId.dcs.deviceId);
    r.thread_id = ~0u;
  }
  r.u.overhead.name = overhead_name(o.overheadKind);
  return r;
}

Record device(const detail::CuptiDeviceRecord& d) {
  Record r = make_record(RecordKind::kDevice);
  r.device = static_cast<std::int32_t>(d.id);
  r.u.device_info.name = intern(d.name == nullptr ? "" : d.name);
  r.u.device_info.total_memory = d.globalMemorySize;
  r.u.device_info.major = static_cast<std::int32_t>(d.computeCapabilityMajor);
  r.u.device_info.minor = static_cast<std::int32_t>(d.computeCapabilityMinor);
  r.u.device_info.multiprocessors = static_cast<std::int32_t>(d.numMultiprocessors);
  r.thread_id = ~0u;
  return r;
}

Record context(const detail::CuptiContextRecord& c) {
  Record r = make_record(RecordKind::kContext);
  r.device = static_cast<std::int32_t>(c.deviceId);
  r.stream = c.nullStreamId;
  r.u.stream_info.context_id = c.contextId;
  r.thread_id = ~0u;
  return r;
}

Record stream(const CUpti_ActivityStream& s, const ContextDevices& devices) {
  Record r = make_record(RecordKind::kStream);
  r.device = device_of(devices, s.contextId, -1);
  r.stream = s.streamId;
  r.u.stream_info = {s.contextId, static_cast<std::int32_t>(s.priority), static_cast<std::uint32_t>(s.flag)};
  r.thread_id = ~0u;
  return r;
}

Record external_correlation(const CUpti_ActivityExternalCorrelation& e) {
  Record r = make_record(RecordKind::kExternalCorrelation);
  r.correlation_id = e.correlationId;
  r.u.external = {e.externalId, static_cast<std::uint32_t>(e.externalKind)};
  r.thread_id = ~0u;
  return r;
}

template <typename Activity>
const Activity& as(const CUpti_Activity* activity) {
  return *reinterpret_cast<const Activity*>(activity);
}

}  // namespace

const char* CuptiDecoder::api_name(bool runtime, std::uint32_t callback_id) {
  const std::uint64_t key = (static_cast<std::uint64_t>(runtime) << 32) | callback_id;
  if (auto it = api_names_.find(key); it != api_names_.end()) return it->second;
  const char* raw = nullptr;
  const CUptiResult result = cuptiGetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                                                  callback_id, &raw);
  std::string name = result == CUPTI_SUCCESS && raw != nullptr ? raw : (runtime ? "cudaRuntime#" : "cuDriver#") + std::to_string(callback_id);
  // CUPTI names carry the version they appeared in ("cudaLaunchKernel_v7000").
  if (const std::size_t v = name.rfind("_v"); v != std::string::npos && v + 2 < name.size() &&
                                              name.find_first_not_of("0123456789", v + 2) == std::string::npos) {
    name.resize(v);
  }
  return api_names_[key] = intern(name);
}

void CuptiDecoder::push_work(const Record& record) {
  if (record.start_ns == 0 || record.end_ns < record.start_ns) {
    ++incomplete_;
    return;
  }
  scratch_.push_back(record);
}

std::size_t CuptiDecoder::decode(std::uint8_t* buffer, std::size_t valid_bytes, const Output& out) {
  scratch_.clear();
  std::vector<std::pair<std::size_t, std::uint32_t>> markers;  // scratch_ index, marker id
  std::size_t count = 0;
  CUpti_Activity* activity = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_bytes, &activity) == CUPTI_SUCCESS) {
    ++count;
    switch (activity->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: push_work(kernel(as<detail::CuptiKernelRecord>(activity))); break;
      case CUPTI_ACTIVITY_KIND_MEMCPY: push_work(memcpy_record(as<CUpti_ActivityMemcpy6>(activity))); break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2: push_work(peer_copy(as<CUpti_ActivityMemcpyPtoP4>(activity))); break;
      case CUPTI_ACTIVITY_KIND_MEMSET: push_work(memset_record(as<CUpti_ActivityMemset4>(activity))); break;
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        scratch_.push_back(synchronization(as<CUpti_ActivitySynchronization2>(activity), context_devices_));
        break;
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto& a = as<CUpti_ActivityAPI>(activity);
        const bool runtime = activity->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
        scratch_.push_back(api_call(a, runtime, api_name(runtime, a.cbid)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER: {
        const auto& m = as<CUpti_ActivityMarker2>(activity);
        markers.emplace_back(scratch_.size(), m.id);
        scratch_.push_back(marker(m));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
        const auto& d = as<CUpti_ActivityMarkerData2>(activity);
        for (auto m = markers.rbegin(); m != markers.rend(); ++m) {
          if (m->second != d.id || scratch_[m->first].kind == RecordKind::kNvtxRangeEnd) continue;
          apply_marker_data(d, scratch_[m->first]);
          break;
        }
        break;
      }
      case CUPTI_ACTIVITY_KIND_OVERHEAD: scratch_.push_back(overhead(as<CUpti_ActivityOverhead3>(activity))); break;
      case CUPTI_ACTIVITY_KIND_DEVICE: scratch_.push_back(device(as<detail::CuptiDeviceRecord>(activity))); break;
      case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const auto& c = as<detail::CuptiContextRecord>(activity);
        context_devices_[c.contextId] = static_cast<int>(c.deviceId);
        scratch_.push_back(context(c));
        break;
      }
      case CUPTI_ACTIVITY_KIND_STREAM: scratch_.push_back(stream(as<CUpti_ActivityStream>(activity), context_devices_)); break;
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        scratch_.push_back(external_correlation(as<CUpti_ActivityExternalCorrelation>(activity)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMORY2: {
        // Device memory only (cudaMalloc/cudaFree, cudaMallocAsync, the driver's calls);
        // pinned and managed host memory are not what the device holds.
        const auto& m = as<CUpti_ActivityMemory4>(activity);
        const bool allocation = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
        if (m.memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
            (!allocation && m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)) {
          ++skipped_;
          break;
        }
        scratch_.push_back(device_memory_.record(static_cast<int>(m.deviceId), m.address, m.bytes, !allocation, m.timestamp));
        break;
      }
      default: ++skipped_; break;
    }
  }
  if (!scratch_.empty()) out(scratch_.data(), scratch_.size());
  return count;
}

}  // namespace cudascope::profiler
