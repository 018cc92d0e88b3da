#include "runtime_source.h"

#include "nvtx_emit.h"

#include <cudascope/cuda/device.h>
#include <cudascope/profiler/record_buffers.h>
#include <cudascope/profiler/strings.h>

#include <cstring>

namespace cudascope::profiler::detail {
namespace ins = cuda::instrumentation;

namespace {
RecordBuffers& buffers() { return RecordBuffers::process(); }
}  // namespace

void RuntimeSource::describe_device(int device) noexcept {
  if (device < 0 || device >= 64) return;
  const std::uint64_t bit = 1ULL << device;
  if (described_devices_.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  Record r = make_record(RecordKind::kDevice);
  r.device = device;
  r.start_ns = r.end_ns = ins::host_time_ns();
  try {
    const cuda::DeviceProperties props = cuda::get_device_properties(device);
    r.u.device_info.name = intern(props.name);
    r.u.device_info.total_memory = props.total_memory;
    r.u.device_info.major = props.major;
    r.u.device_info.minor = props.minor;
    r.u.device_info.multiprocessors = props.multi_processor_count;
    r.u.device_info.is_sim = cuda::backend_name() == "sim";
  } catch (...) {
    r.u.device_info.name = intern("unknown device");
  }
  buffers().emit(r);
}

namespace {
// The runtime's allocator actions in the profiler's words. A switch with no default: a new
// action on either side is a compiler warning here (-Wswitch), not a silently wrong record.
AllocatorAction allocator_action(ins::AllocatorEvent::Action action) {
  using A = ins::AllocatorEvent::Action;
  switch (action) {
    case A::kAlloc: return AllocatorAction::kAlloc;
    case A::kFree: return AllocatorAction::kFree;
    case A::kSegmentAlloc: return AllocatorAction::kSegmentAlloc;
    case A::kSegmentFree: return AllocatorAction::kSegmentFree;
    case A::kSegmentMap: return AllocatorAction::kSegmentMap;
    case A::kSegmentUnmap: return AllocatorAction::kSegmentUnmap;
    case A::kOom: return AllocatorAction::kOom;
  }
  return AllocatorAction::kAlloc;  // not reached: every action is listed above
}
}  // namespace

void RuntimeSource::on_allocator_event(const ins::AllocatorEvent& event) {
  if (!activities_.contains(Activity::kAllocator)) return;
  Record r = make_record(RecordKind::kAllocator);
  r.detail = static_cast<std::uint8_t>(allocator_action(event.action));
  r.device = event.device;
  r.stream = event.stream_id;
  r.start_ns = r.end_ns = event.time_ns;
  r.u.allocator = {event.address, event.size, event.allocated_bytes, event.reserved_bytes,
                   {event.graph_pool[0], event.graph_pool[1]}};
  buffers().emit(r);
}

void RuntimeSource::on_device_memory(const ins::DeviceMemoryActivity& memory) {
  if (!activities_.contains(Activity::kAllocator)) return;
  Record r;
  {
    std::lock_guard lock(device_memory_mutex_);
    r = device_memory_.record(memory.device, memory.address, memory.bytes, memory.release, memory.time_ns);
  }
  buffers().emit(r);
}

void RuntimeSource::on_kernel(const ins::KernelActivity& kernel) {
  if (!activities_.contains(Activity::kKernel) || outside_window()) return;
  describe_device(kernel.device);
  Record r = make_device_record(RecordKind::kKernel, kernel.device, kernel.stream_id, kernel.start_ns, kernel.end_ns,
                                kernel.correlation_id);
  r.u.kernel.name = kernel.name;
  std::memcpy(r.u.kernel.grid, kernel.grid, sizeof kernel.grid);
  std::memcpy(r.u.kernel.block, kernel.block, sizeof kernel.block);
  r.u.kernel.registers_per_thread = kernel.registers_per_thread;
  r.u.kernel.static_shared_memory = kernel.static_shared_memory;
  r.u.kernel.dynamic_shared_memory = kernel.dynamic_shared_memory;
  const ins::GraphReplay replay = ins::current_graph_replay();
  r.u.kernel.graph_id = replay.graph_id;
  if (replay.correlation_id != 0) r.correlation_id = replay.correlation_id;
  buffers().emit(r);
}

namespace {
CopyKindCode copy_code(ins::CopyKind kind) {
  switch (kind) {
    case ins::CopyKind::kHostToDevice: return CopyKindCode::kHtoD;
    case ins::CopyKind::kDeviceToHost: return CopyKindCode::kDtoH;
    case ins::CopyKind::kDeviceToDevice: return CopyKindCode::kDtoD;
    case ins::CopyKind::kHostToHost: return CopyKindCode::kHtoH;
    case ins::CopyKind::kPeerToPeer: return CopyKindCode::kPtoP;
    case ins::CopyKind::kDefault: break;
  }
  return CopyKindCode::kUnknown;
}
}  // namespace

void RuntimeSource::on_copy(const ins::CopyActivity& copy) {
  if (!activities_.contains(Activity::kMemcpy) || outside_window()) return;
  describe_device(copy.device);
  Record r = make_device_record(RecordKind::kMemcpy, copy.device, copy.stream_id, copy.start_ns, copy.end_ns,
                                copy.correlation_id);
  r.detail = static_cast<std::uint8_t>(copy_code(copy.kind));
  r.u.copy = {copy.bytes, copy.src_device, copy.dst_device};
  if (const ins::GraphReplay replay = ins::current_graph_replay(); replay.correlation_id != 0) {
    r.correlation_id = replay.correlation_id;
  }
  buffers().emit(r);
}

void RuntimeSource::on_memset(const ins::MemsetActivity& memset) {
  if (!activities_.contains(Activity::kMemset) || outside_window()) return;
  describe_device(memset.device);
  Record r = make_device_record(RecordKind::kMemset, memset.device, memset.stream_id, memset.start_ns, memset.end_ns,
                                memset.correlation_id);
  r.u.memset = {memset.bytes, static_cast<std::uint32_t>(memset.value)};
  if (const ins::GraphReplay replay = ins::current_graph_replay(); replay.correlation_id != 0) {
    r.correlation_id = replay.correlation_id;
  }
  buffers().emit(r);
}

void RuntimeSource::on_sync(const ins::SyncActivity& sync) {
  if (!activities_.contains(Activity::kSync) || outside_window()) return;
  Record r = make_record(RecordKind::kSync);
  switch (sync.type) {
    case ins::SyncActivity::Type::kStream: r.detail = static_cast<std::uint8_t>(SyncType::kStream); break;
    case ins::SyncActivity::Type::kDevice: r.detail = static_cast<std::uint8_t>(SyncType::kDevice); break;
    case ins::SyncActivity::Type::kEvent: r.detail = static_cast<std::uint8_t>(SyncType::kEvent); break;
    case ins::SyncActivity::Type::kStreamWaitEvent: r.detail = static_cast<std::uint8_t>(SyncType::kStreamWaitEvent); break;
  }
  r.device = sync.device;
  r.stream = sync.stream_id;
  r.start_ns = sync.start_ns;
  r.end_ns = sync.end_ns;
  r.correlation_id = sync.correlation_id;
  buffers().emit(r);
}

void RuntimeSource::on_api_call(const ins::ApiCall& call) {
  // The runtime reports only launch-type calls, so both activities record them.
  if (!activities_.contains(Activity::kRuntime) && !activities_.contains(Activity::kLaunch)) return;
  Record r = make_record(RecordKind::kRuntimeApi);
  r.start_ns = call.start_ns;
  r.end_ns = call.end_ns;
  r.correlation_id = call.correlation_id;
  r.u.api.name = call.name;
  buffers().emit(r);
}

// Event timings are the program's own annotations of its streams, recorded with NVTX's.
void RuntimeSource::on_event_timing(const ins::EventTiming& timing) {
  if (!activities_.contains(Activity::kNvtx)) return;
  describe_device(timing.device);
  Record r = make_device_record(RecordKind::kEventTiming, timing.device, timing.stream_id, timing.start_ns,
                                timing.end_ns, 0);
  r.u.event_timing.name = timing.name != nullptr ? intern(timing.name) : nullptr;
  buffers().emit(r);
}

void RuntimeSource::on_nvtx(const ins::NvtxEvent& event) {
  if (!activities_.contains(Activity::kNvtx) || nvtx_injection_active()) return;
  switch (event.type) {
    case ins::NvtxEvent::Type::kPush:
    case ins::NvtxEvent::Type::kMark: {
      const RecordKind kind = event.type == ins::NvtxEvent::Type::kPush ? RecordKind::kNvtxPush : RecordKind::kNvtxMark;
      const std::size_t length = event.message == nullptr ? 0 : std::strlen(event.message);
      emit_nvtx_with_text(kind, event.message, length, 0, 0, event.time_ns, {});
      break;
    }
    case ins::NvtxEvent::Type::kPop:
      emit_nvtx_end(RecordKind::kNvtxPop, 0, 0, event.time_ns);
      break;
  }
}

}  // namespace cudascope::profiler::detail
