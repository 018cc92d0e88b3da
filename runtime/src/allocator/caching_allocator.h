#pragma once
// Internal entry points of the process-wide allocator, for the runtime's other files and
// the allocator's tests (which include runtime/src). Thread-safe.

#include "history.h"

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/memory.h>

#include <string>
#include <utility>

namespace cudascope::cuda::detail::alloc {

void set_config(const AllocatorConfig& config);
std::size_t live_allocations(int device);
// "" when the device's blocks tile their segments and the statistics equal a recount.
std::string check_invariants(int device);
void clear_memory_limit(int device);
// Returns how many addresses of the list set before were used (one per cudaMalloc).
std::size_t set_recorded_addresses(int device, std::vector<std::uintptr_t> addresses);
void set_history(const HistorySettings& settings);
std::size_t largest_free_block(int device);
void snapshot_devices(memory::Snapshot& out);
// The segment (base, size) holding the allocated block at `ptr` on `device`, for CUDA IPC.
// Throws cuda::Error when `ptr` is not a live block there, or when the process's allocator
// is not the native one (cudaMallocAsync and pluggable allocators have no segments to share).
std::pair<void*, std::size_t> base_allocation(void* ptr, int device);

}  // namespace cudascope::cuda::detail::alloc
