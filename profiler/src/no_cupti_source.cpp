// Built without the CUDA toolkit: no CUPTI source.
#include "device_source.h"

#include <cudascope/profiler/external_correlation.h>

namespace cudascope::profiler {
namespace detail {
std::unique_ptr<DeviceSource> make_cupti_source(const SessionOptions&) { return nullptr; }
void on_nccl_in_process() noexcept {}
}  // namespace detail
void push_external_correlation_id(std::uint64_t) noexcept {}
void pop_external_correlation_id() noexcept {}
}  // namespace cudascope::profiler
