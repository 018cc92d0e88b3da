#pragma once
// Internal entry points of the process-wide allocator, for the runtime's other files and
// the allocator's tests (which include runtime/src). Thread-safe.

#include "history.h"

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/memory.h>

#include <string>

namespace cudascope::cuda::detail::alloc {

void set_config(const AllocatorConfig& config);
std::size_t live_allocations(int device);
// "" when the device's blocks tile their segments and the statistics equal a recount.
std::string check_invariants(int device);
void clear_memory_limit(int device);
void set_recorded_addresses(int device, std::vector<std::uintptr_t> addresses);
void set_history(const HistorySettings& settings);
std::size_t largest_free_block(int device);
void snapshot_devices(memory::Snapshot& out);

}  // namespace cudascope::cuda::detail::alloc
