#include <cudascope/profiler/record.h>
#include <cudascope/profiler/strings.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>

namespace cudascope::profiler {

const char* intern(std::string_view text) {
  static std::mutex mutex;
  static auto* table = new std::unordered_set<std::string>();  // never destroyed: records point into it
  std::lock_guard lock(mutex);
  return table->emplace(text).first->c_str();
}

std::string record_text(const Record& r, const Record* next, std::size_t available) {
  std::string text(r.u.nvtx.text, std::min<std::size_t>(r.text_size, NvtxPayload::kInlineText));
  std::size_t remaining = r.text_size - text.size();
  for (std::size_t i = 0; i < r.u.nvtx.continuation_records && i < available && remaining > 0; ++i) {
    if (next[i].kind != RecordKind::kText) break;
    const std::size_t take = std::min(remaining, TextPayload::kSize);
    text.append(next[i].u.text.text, take);
    remaining -= take;
  }
  return text;
}

const char* to_string(RecordKind kind) noexcept {
  switch (kind) {
    case RecordKind::kKernel: return "kernel";
    case RecordKind::kMemcpy: return "memcpy";
    case RecordKind::kMemset: return "memset";
    case RecordKind::kSync: return "sync";
    case RecordKind::kRuntimeApi: return "runtime";
    case RecordKind::kDriverApi: return "driver";
    case RecordKind::kNvtxPush: return "nvtx_push";
    case RecordKind::kNvtxPop: return "nvtx_pop";
    case RecordKind::kNvtxMark: return "nvtx_mark";
    case RecordKind::kNvtxRangeStart: return "nvtx_range_start";
    case RecordKind::kNvtxRangeEnd: return "nvtx_range_end";
    case RecordKind::kAllocator: return "allocator";
    case RecordKind::kOverhead: return "overhead";
    case RecordKind::kDevice: return "device";
    case RecordKind::kContext: return "context";
    case RecordKind::kStream: return "stream";
    case RecordKind::kExternalCorrelation: return "external_correlation";
    case RecordKind::kThreadName: return "thread_name";
    case RecordKind::kDropped: return "dropped";
    case RecordKind::kText: return "text";
    case RecordKind::kDeviceMemory: return "device_memory";
    case RecordKind::kEventTiming: return "event_timing";
  }
  return "?";
}

Record DeviceMemoryTally::record(int device, std::uint64_t address, std::uint64_t bytes, bool release,
                                 std::uint64_t time_ns) {
  Record r = make_record(RecordKind::kDeviceMemory);
  r.detail = release ? 1 : 0;
  r.device = device;
  r.start_ns = r.end_ns = time_ns;
  std::uint64_t held = 0;
  if (device >= 0 && device < kDevices) {
    std::uint64_t& h = held_[device];
    h = release ? (h > bytes ? h - bytes : 0) : h + bytes;
    held = h;
  }
  r.u.device_memory = {address, bytes, held};
  return r;
}

const char* to_string(CopyKindCode kind) noexcept {
  switch (kind) {
    case CopyKindCode::kHtoD: return "HtoD";
    case CopyKindCode::kDtoH: return "DtoH";
    case CopyKindCode::kDtoD: return "DtoD";
    case CopyKindCode::kHtoH: return "HtoH";
    case CopyKindCode::kPtoP: return "PtoP";
    case CopyKindCode::kHtoA: return "HtoA";
    case CopyKindCode::kAtoH: return "AtoH";
    case CopyKindCode::kAtoA: return "AtoA";
    case CopyKindCode::kAtoD: return "AtoD";
    case CopyKindCode::kDtoA: return "DtoA";
    case CopyKindCode::kUnknown: break;
  }
  return "Unknown";
}

const char* to_string(SyncType type) noexcept {
  switch (type) {
    case SyncType::kEvent: return "Event Sync";
    case SyncType::kStreamWaitEvent: return "Stream Wait Event";
    case SyncType::kStream: return "Stream Sync";
    case SyncType::kContext: return "Context Sync";
    case SyncType::kDevice: return "Device Sync";
    case SyncType::kUnknown: break;
  }
  return "Sync";
}

const char* to_string(AllocatorAction action) noexcept {
  switch (action) {
    case AllocatorAction::kAlloc: return "alloc";
    case AllocatorAction::kFree: return "free";
    case AllocatorAction::kSegmentAlloc: return "segment_alloc";
    case AllocatorAction::kSegmentFree: return "segment_free";
    case AllocatorAction::kSegmentMap: return "segment_map";
    case AllocatorAction::kSegmentUnmap: return "segment_unmap";
    case AllocatorAction::kOom: return "oom";
  }
  return "?";
}

}  // namespace cudascope::profiler
