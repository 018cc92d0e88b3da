#include "event_timing.h"

#include <cudascope/cuda/instrumentation.h>

#include "backend/backend.h"
#include "runtime_state.h"

#include <cmath>
#include <cstdint>
#include <mutex>
#include <vector>

namespace cudascope::cuda::detail {
namespace {

namespace ins = instrumentation;

struct Reference {
  EventHandle event = nullptr;
  std::uint64_t host_ns = 0;  // when the reference event completed, on the host clock
};

std::mutex references_mutex;
std::vector<Reference>& references() {
  static auto* all = new std::vector<Reference>();  // lives until exit, as the events in it
  return *all;
}

// The device's reference, made on first use: recorded on a stream of its own with nothing
// queued, so the device reaches it as soon as it is submitted; its host time is the middle
// of the record-to-completion interval. A busy host stretches that interval (the waiting
// thread wakes late), so of several tries the one with the shortest interval is kept, as
// clock synchronisation keeps the exchange with the shortest round trip.
Reference reference(int device) {
  constexpr int kTries = 8;
  std::lock_guard lock(references_mutex);
  auto& all = references();
  if (all.size() <= static_cast<std::size_t>(device)) all.resize(static_cast<std::size_t>(device) + 1);
  Reference& ref = all[static_cast<std::size_t>(device)];
  if (ref.event != nullptr) return ref;
  Backend& backend = lazy_backend();
  StreamHandle stream = backend.stream_create(device, 0);
  std::uint64_t best_interval = UINT64_MAX;
  for (int i = 0; i < kTries; ++i) {
    EventHandle event = backend.event_create(device, EventFlags{true, false, false});
    const std::uint64_t before = ins::host_time_ns();
    backend.event_record(device, event, stream);
    backend.event_synchronize(device, event);
    const std::uint64_t after = ins::host_time_ns();
    if (after - before < best_interval) {
      if (ref.event != nullptr) backend.event_destroy(device, ref.event);
      best_interval = after - before;
      ref = {event, before + (after - before) / 2};
    } else {
      backend.event_destroy(device, event);
    }
  }
  return ref;
}

}  // namespace

void prepare_event_timing(int device) { reference(device); }

void report_event_timing(const Event& start, const Event& end, float ms) noexcept {
  ins::Observer* observer = ins::observer();
  if (observer == nullptr || end.handle() == nullptr) return;
  try {
    Reference ref;
    {
      std::lock_guard lock(references_mutex);
      const auto& all = references();
      const auto device = static_cast<std::size_t>(end.device_index());
      if (device < all.size()) ref = all[device];
    }
    if (ref.event == nullptr) return;  // timing began after `end` was recorded: cannot place it
    const float offset_ms = lazy_backend().event_elapsed_ms(ref.event, end.handle());
    if (!(offset_ms >= 0.0f) || !(ms >= 0.0f)) return;
    const auto end_ns = ref.host_ns + static_cast<std::uint64_t>(std::llround(static_cast<double>(offset_ms) * 1e6));
    // An end recorded before the reference (timing began between its record and now) reads
    // as a span in the future on some backends: not placeable.
    if (end_ns > ins::host_time_ns() + 1'000'000) return;
    const auto length_ns = static_cast<std::uint64_t>(std::llround(static_cast<double>(ms) * 1e6));
    ins::EventTiming timing{start.name().empty() ? nullptr : start.name().c_str(), start.device_index(),
                            start.recorded_stream(), end_ns > length_ns ? end_ns - length_ns : 0, end_ns};
    observer->on_event_timing(timing);
  } catch (...) {
    // A span is an observation: failing to place it must not fail the caller's elapsed_time.
  }
}

}  // namespace cudascope::cuda::detail
