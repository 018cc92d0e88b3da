// CUDA IPC of tensors (ipc.h): the producer's share_tensor, the consumer's
// open_shared_tensor, ipc_collect, and the handle's text form.
#include "handle_checks.h"
#include "opened_segments.h"
#include "ref_counters.h"
#include "sent_blocks.h"

#include "../allocator/caching_allocator.h"
#include "../allocator/device_allocator.h"
#include "../check.h"
#include "../runtime_state.h"
#include "../tensor/storage.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/ipc.h>
#include <cudascope/cuda/stream.h>

#include <cstdio>

namespace cudascope::cuda {
namespace {

// torch's CUDA_IPC_MAXIMUM_EVENTS_TO_USE: past it, a share synchronises instead of recording
// an interprocess event (CUDA limits how many such events may be recorded).
constexpr std::size_t kMaximumEvents = 1000;

struct IpcState {
  detail::ipc::RefCounters counters;
  detail::ipc::SentBlocks sent{counters};
  detail::ipc::OpenedSegments opened;
};

// Never destroyed: storages freed during exit still call into it. Only the shared-memory
// names go at exit (counters files; on sim the events' too), so /dev/shm does not fill up.
IpcState& state() {
  static auto* s = new IpcState();
  static const struct NamesAtExit {
    IpcState* state;
    ~NamesAtExit() {
      state->counters.unlink_all();
      try {
        detail::Backend& backend = detail::backend();
        if (std::string(backend.name()) != "sim") return;
        // Records still queued hold the events' shared state (its last holder removes the
        // name): let them run first, or the process may end before the worker lets go.
        for (int device = 0; device < backend.device_count(); ++device) backend.synchronize_device(device);
        state->sent.drop_events_at_exit();
      } catch (...) {
      }
    }
  } names_at_exit{s};
  return *s;
}

// What a consumer's tensors hold: the opened segment and the counter to decrement when the
// last of them goes (torch's IpcDeleterContext).
struct Received {
  std::shared_ptr<void> segment;
  std::string counter_file;
  std::uint64_t counter_offset;
  int device;

  ~Received() {
    // The producer may reuse the memory once the counter drops: finish this process's work on
    // it first (the current stream, as torch), then unmap, then release.
    try {
      DeviceGuard guard(device);
      current_stream(device).synchronize();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope: releasing a shared tensor: %s\n", e.what());
    }
    segment.reset();
    detail::ipc::decrement_counter(counter_file, counter_offset);
  }
};

}  // namespace

SharedTensorHandle share_tensor(const Tensor& tensor) {
  CUDASCOPE_CHECK(tensor.defined() && tensor.is_cuda(), error_code::kInvalidValue, "share_tensor",
                  "only CUDA tensors can be shared through CUDA IPC (got a " +
                      std::string(tensor.defined() ? "CPU" : "undefined") + " tensor)");
  const std::shared_ptr<Storage>& storage = tensor.storage();
  CUDASCOPE_CHECK(storage->bytes() > 0, error_code::kInvalidValue, "share_tensor", "the tensor has no memory to share");
  const int device = storage->device();
  DeviceGuard guard(device);
  IpcState& s = state();
  const auto [base, segment_size] = detail::alloc::base_allocation(storage->data(), device);

  SharedTensorHandle handle;
  handle.device = device;
  handle.mem_handle = detail::lazy_backend().ipc_get_mem_handle(device, base);
  handle.segment_size_bytes = segment_size;
  handle.storage_offset_bytes = static_cast<std::uint64_t>(static_cast<char*>(storage->data()) - static_cast<char*>(base));
  handle.storage_size_bytes = storage->bytes();
  std::unique_ptr<Event> event;
  if (s.sent.events_in_use() < kMaximumEvents) {
    // The consumer's stream waits for what this process has queued on the memory so far.
    event = std::make_unique<Event>(/*enable_timing=*/false, /*blocking=*/true, /*interprocess=*/true);
    event->record(current_stream(device));
    handle.event_handle = event->ipc_handle();
    handle.event_sync_required = true;
  } else {
    current_stream(device).synchronize();
  }
  // As torch's CudaIPCCollect free-memory callback: blocks consumers have released go back
  // to the cache before the allocator asks the device for more.
  static const bool collect_on_cache_miss = [] {
    detail::alloc::set_free_memory_callback([] { return ipc_collect(); });
    return true;
  }();
  (void)collect_on_cache_miss;
  detail::ipc::CounterSlot slot = s.counters.take();
  handle.ref_counter_handle = slot.file;
  handle.ref_counter_offset = slot.offset;
  s.sent.add_share(storage, std::move(slot), std::move(event));
  handle.dtype = tensor.dtype();
  handle.sizes = tensor.sizes();
  handle.strides = tensor.strides();
  handle.storage_offset = tensor.storage_offset();
  return handle;
}

Tensor open_shared_tensor(const SharedTensorHandle& handle) {
  detail::ipc::check_handle(handle);  // the handle came from outside: before any device work
  const int device = detail::resolve_device(handle.device);
  DeviceGuard guard(device);
  if (handle.event_sync_required) {
    Event producer_done = Event::from_ipc_handle(handle.event_handle, device);
    producer_done.wait(current_stream(device));
  }
  auto received = std::make_shared<Received>();
  received->segment = state().opened.open(device, handle.mem_handle);
  received->counter_file = handle.ref_counter_handle;
  received->counter_offset = handle.ref_counter_offset;
  received->device = device;
  void* data = static_cast<char*>(received->segment.get()) + handle.storage_offset_bytes;
  auto storage = std::make_shared<Storage>(device, data, static_cast<std::size_t>(handle.storage_size_bytes),
                                           std::shared_ptr<void>(std::move(received)));
  return TensorAccess::make(std::move(storage), handle.dtype, handle.sizes, handle.strides, handle.storage_offset);
}

bool ipc_collect() {
  IpcState& s = state();
  const bool freed = s.sent.collect();
  if (s.sent.limbo_blocks() == 0) s.counters.drop_idle_current_file();
  return freed;
}

IpcStats ipc_stats() {
  IpcState& s = state();
  IpcStats stats;
  stats.lent_blocks = s.sent.lent_blocks();
  stats.limbo_blocks = s.sent.limbo_blocks();
  stats.counters_in_use = s.counters.slots_in_use();
  stats.counter_files = s.counters.files();
  stats.open_mem_handles = s.opened.open_count();
  return stats;
}

}  // namespace cudascope::cuda
