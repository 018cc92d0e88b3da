#pragma once
// External correlation ids: tag the CUDA calls the calling thread makes between push and pop
// with `id` (a framework's op id, a step number); kernels they launch carry it in the trace
// ("External id"). Needs the CUPTI source; a no-op elsewhere. Per thread, nestable.

#include <cstdint>

namespace cudascope::profiler {

void push_external_correlation_id(std::uint64_t id) noexcept;
void pop_external_correlation_id() noexcept;

}  // namespace cudascope::profiler
