// Events, created lazily on the device of the first stream they are recorded on.
#include <cudascope/cuda/event.h>
#include <cudascope/cuda/stream.h>

#include <cudascope/cuda/instrumentation.h>

#include "check.h"
#include "event_timing.h"
#include "runtime_state.h"
#include "sanitizer/hooks.h"

namespace cudascope::cuda {

struct Event::Impl {
  int device;
  detail::EventHandle handle;
  ~Impl() {
    try {
      if (sanitizer::detail::active()) sanitizer::detail::event_destroyed(handle);
      detail::lazy_backend().event_destroy(device, handle);
    } catch (...) {
    }
  }
};

Event::Event(bool enable_timing, bool blocking, bool interprocess)
    : enable_timing_(enable_timing), blocking_(blocking), interprocess_(interprocess) {}

Event::~Event() = default;
Event::Event(Event&&) noexcept = default;
Event& Event::operator=(Event&&) noexcept = default;

Event Event::from_ipc_handle(const IpcEventHandle& handle, int device) {
  const int index = detail::resolve_device(device);
  Event event(false, false, true);
  event.device_ = index;
  event.impl_.reset(new Impl{index, detail::lazy_backend().event_open_ipc(index, handle)});
  return event;
}

void Event::ensure_created(int device) {
  if (impl_) {
    CUDASCOPE_CHECK(device_ == device, error_code::kInvalidValue, "cudaEventRecord",
                    "event was created on device " + std::to_string(device_) + " but recorded on a stream of device " +
                        std::to_string(device));
    return;
  }
  detail::EventFlags flags{enable_timing_, blocking_, interprocess_};
  impl_.reset(new Impl{device, detail::lazy_backend().event_create(device, flags)});
  device_ = device;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& stream) {
  if (enable_timing_ && instrumentation::observer() != nullptr) detail::prepare_event_timing(stream.device_index());
  ensure_created(stream.device_index());
  recorded_stream_ = stream.id();
  detail::lazy_backend().event_record(device_, impl_->handle, stream.handle());
  if (sanitizer::detail::active()) sanitizer::detail::event_recorded(impl_->handle, device_, stream.id());
}

void Event::wait() { wait(current_stream()); }

void Event::wait(const Stream& stream) { stream.wait_event(*this); }

bool Event::query() const {
  if (!impl_) return true;
  return detail::lazy_backend().event_query(device_, impl_->handle);
}

void Event::synchronize() const {
  if (!impl_) return;
  detail::on_synchronizing_call("cudaEventSynchronize");
  detail::lazy_backend().event_synchronize(device_, impl_->handle);
  if (sanitizer::detail::active()) sanitizer::detail::event_synchronized(impl_->handle);
}

float Event::elapsed_time(const Event& end) const {
  CUDASCOPE_CHECK(impl_ && end.impl_, error_code::kInvalidResourceHandle, "cudaEventElapsedTime",
                  "both events must be recorded before elapsed_time()");
  CUDASCOPE_CHECK(enable_timing_ && end.enable_timing_, error_code::kInvalidResourceHandle, "cudaEventElapsedTime",
                  "both events must be created with enable_timing=true");
  const float ms = detail::lazy_backend().event_elapsed_ms(impl_->handle, end.impl_->handle);
  if (instrumentation::observer() != nullptr) detail::report_event_timing(*this, end, ms);
  return ms;
}

IpcEventHandle Event::ipc_handle() const {
  CUDASCOPE_CHECK(interprocess_, error_code::kInvalidResourceHandle, "cudaIpcGetEventHandle",
                  "the event was not created with interprocess=true");
  if (!impl_) const_cast<Event*>(this)->ensure_created(current_device());
  return detail::lazy_backend().event_ipc_handle(device_, impl_->handle);
}

bool Event::is_created() const noexcept { return impl_ != nullptr; }

void* Event::handle() const noexcept { return impl_ ? impl_->handle : nullptr; }

}  // namespace cudascope::cuda
