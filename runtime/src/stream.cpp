// Streams: pools per device and priority (as torch's), and the per-thread current stream.
#include <cudascope/cuda/event.h>
#include <cudascope/cuda/stream.h>

#include "check.h"
#include "runtime_state.h"
#include "sanitizer/hooks.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace cudascope::cuda {
namespace detail {
namespace {

// Like torch, Stream() hands out streams round-robin from a fixed pool per device and
// priority level, so constructing Streams in a loop creates no more than the pool. As torch
// does on CUDA, the first Stream() on a device creates the whole pool at once (kPoolSize
// streams for each of up to kMaxPriorities levels, slot by slot): the driver takes device
// memory for each stream, so creating them later, between cudaMallocs, would place a
// process's allocations elsewhere than PyTorch's (seen replaying recorded sequences).
constexpr int kPoolSize = 32;
constexpr int kMaxPriorities = 4;  // torch's max_compile_time_stream_priorities

struct PoolSlot {
  StreamHandle handle = nullptr;
  std::int64_t id = 0;
};

struct DevicePools {
  std::once_flag created;
  std::array<std::array<PoolSlot, kPoolSize>, kMaxPriorities> slots;
  std::array<std::atomic<unsigned>, kMaxPriorities> next{};
};

// Slot by slot, each level's stream of that slot, in the order torch creates them.
void create_pool(DevicePools& pools, int device, int least_priority, int levels) {
  Backend& backend = lazy_backend();
  for (std::size_t i = 0; i < kPoolSize; ++i) {
    for (int level = 0; level < levels; ++level) {
      PoolSlot& slot = pools.slots[static_cast<std::size_t>(level)][i];
      slot.handle = backend.stream_create(device, least_priority - level);
      slot.id = backend.stream_id(device, slot.handle);
    }
  }
}

std::vector<std::unique_ptr<DevicePools>>& pools() {
  static auto* all = [] {
    auto* table = new std::vector<std::unique_ptr<DevicePools>>();
    const int count = lazy_backend().device_count();
    for (int i = 0; i < count; ++i) table->push_back(std::make_unique<DevicePools>());
    return table;
  }();
  return *all;
}

struct CurrentStream {
  StreamHandle handle = nullptr;
  std::int64_t id = 0;
  int priority = 0;
};

// Per thread, per device. Every allocation without an explicit stream reads this, so the
// first devices' slots are a plain array: trivially destructible (no first-use guard to
// test). Not initial-exec: see invalid_device_of_thread in device.cpp. Devices beyond it
// use a vector grown on first use.
constexpr std::size_t kInlineDevices = 8;
thread_local std::array<CurrentStream, kInlineDevices> inline_streams;
thread_local std::vector<CurrentStream> more_streams;

CurrentStream& current_slot(int device) {
  const auto index = static_cast<std::size_t>(device);
  if (index < kInlineDevices) [[likely]] return inline_streams[index];
  if (more_streams.size() <= index - kInlineDevices) more_streams.resize(index - kInlineDevices + 1);
  return more_streams[index - kInlineDevices];
}

}  // namespace
}  // namespace detail

Stream::Stream(int device, int priority) {
  device_ = detail::resolve_device(device);
  detail::Backend& backend = detail::lazy_backend();
  const auto [least, greatest] = backend.stream_priority_range();
  const int levels = std::min(least - greatest + 1, detail::kMaxPriorities);
  // As torch's, a priority past the last level gets the last level's stream (and priority).
  const int level = std::min(least - std::clamp(priority, greatest, least), levels - 1);
  priority_ = least - level;
  detail::DevicePools& pools = *detail::pools()[static_cast<std::size_t>(device_)];
  std::call_once(pools.created, [&, least = least] { detail::create_pool(pools, device_, least, levels); });
  const unsigned index = pools.next[static_cast<std::size_t>(level)].fetch_add(1) % detail::kPoolSize;
  const detail::PoolSlot& slot = pools.slots[static_cast<std::size_t>(level)][index];
  handle_ = slot.handle;
  id_ = slot.id;
}

bool Stream::query() const { return detail::lazy_backend().stream_query(device_, handle_); }

void Stream::synchronize() const {
  detail::on_synchronizing_call("cudaStreamSynchronize");
  detail::lazy_backend().stream_synchronize(device_, handle_);
  if (sanitizer::detail::active()) sanitizer::detail::stream_synchronized(device_, id_);
}

void Stream::wait_event(const Event& event) const {
  if (!event.is_created()) return;
  detail::lazy_backend().stream_wait_event(device_, handle_, event.handle());
  if (sanitizer::detail::active()) sanitizer::detail::event_waited(event.handle(), device_, id_);
}

void Stream::wait_stream(const Stream& other) const {
  Event event;
  event.record(other);
  wait_event(event);
}

Event Stream::record_event() const {
  Event event;
  event.record(*this);
  return event;
}

void Stream::record_event(Event& event) const { event.record(*this); }

std::pair<int, int> Stream::priority_range() { return detail::lazy_backend().stream_priority_range(); }

// The id identifies the stream in traces and snapshots; the backend knows it.
ExternalStream::ExternalStream(void* stream_ptr, int device)
    : Stream(Wrap{}, detail::resolve_device(device), 0,
             detail::lazy_backend().stream_id(detail::resolve_device(device), stream_ptr), stream_ptr) {}

Stream current_stream(int device) {
  const int index = detail::resolve_device(device);
  const detail::CurrentStream& current = detail::current_slot(index);
  return Stream(Stream::Wrap{}, index, current.priority, current.id, current.handle);
}

namespace detail {
CurrentStreamOf current_stream_of(int device) {
  const CurrentStream& current = current_slot(device);
  return {current.handle, current.id};
}
}  // namespace detail

Stream default_stream(int device) {
  const int index = detail::resolve_device(device);
  return Stream(Stream::Wrap{}, index, 0, 0, nullptr);
}

namespace detail {
namespace {
void set_current_slot(const Stream& stream) {
  current_slot(stream.device_index()) = {stream.handle(), stream.id(), stream.priority()};
}
}  // namespace
}  // namespace detail

// As torch.cuda.set_stream: the stream's device becomes current too.
void set_stream(const Stream& stream) {
  detail::set_thread_device(stream.device_index());
  detail::set_current_slot(stream);
}

StreamGuard::StreamGuard(const Stream& stream) noexcept : original_device_(-1), original_stream_on_target_(stream) {
  try {
    original_device_ = detail::thread_device();
    original_stream_on_target_ = current_stream(stream.device_index());
    set_stream(stream);
  } catch (...) {
    // Reached when the backend cannot answer: in a child forked after CUDA was initialised,
    // or when cudaGetDevice / cudaSetDevice fail (a driver error). A guard is noexcept (as
    // torch's), so it does not report the failure: the next runtime call on this thread does.
  }
}

StreamGuard::~StreamGuard() noexcept {
  try {
    detail::set_current_slot(original_stream_on_target_);
    if (original_device_ >= 0) detail::set_thread_device(original_device_);
  } catch (...) {
  }
}

}  // namespace cudascope::cuda
