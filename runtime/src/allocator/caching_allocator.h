#pragma once
// Internal entry points of the process-wide allocator, for the runtime's other files and
// the allocator's tests (which include runtime/src). Thread-safe.

#include "history.h"

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/memory.h>

#include <functional>
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
// Reserved, allocated and active bytes now: what replays sample after each request (a copy
// of the counters, without memory_stats()'s map).
struct Usage {
  std::int64_t reserved = 0, allocated = 0, active = 0;
};
Usage usage(int device);
void snapshot_devices(memory::Snapshot& out);
// The segment (base, size) holding the allocated block at `ptr` on `device`, for CUDA IPC.
// Throws cuda::Error when `ptr` is not a live block there, or when the process's allocator
// is not the native one (cudaMallocAsync and pluggable allocators have no segments to share).
std::pair<void*, std::size_t> base_allocation(void* ptr, int device);

// CUDA graphs' private pools (graphs.h), on `device` (an index resolve_device returned). Throw
// cuda::Error when the process's allocator is not the native one (PyTorch's cudaMallocAsync and
// pluggable backends manage capture differently; ours do not support it).
using PoolId = std::pair<unsigned long long, unsigned long long>;
using CaptureStreamFilter = std::function<bool(void* stream)>;
void begin_allocate_to_pool(int device, PoolId id, CaptureStreamFilter filter);
void end_allocate_to_pool(int device, PoolId id);
void release_pool(int device, PoolId id);
int pool_use_count(int device, PoolId id);

}  // namespace cudascope::cuda::detail::alloc
