#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/stream.h>

#include "runtime_state.h"

namespace cudascope::cuda {

void busy_wait(std::chrono::nanoseconds duration, const Stream& stream) {
  const auto nanoseconds = static_cast<std::uint64_t>(duration.count() < 0 ? 0 : duration.count());
  detail::lazy_backend().launch_spin(stream.device_index(), stream.handle(), nanoseconds);
}

void busy_wait(std::chrono::nanoseconds duration) { busy_wait(duration, current_stream()); }

}  // namespace cudascope::cuda
