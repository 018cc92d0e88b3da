#pragma once
// Pinned host memory: torch's caching host allocator (CachingHostAllocator). Blocks are
// rounded up to a power of two and cached by size after they are freed; a block used by
// device work (record_stream, or a non_blocking copy) is reused only once events recorded on
// those streams at free time have completed, so a freed staging buffer is never overwritten
// while a copy still reads it.
//
// Thread-safety: every function here is thread-safe.

#include <cudascope/cuda/stream.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace cudascope::cuda {

// torch.cuda.host_memory_stats(): PyTorch 2.11's keys, and its figures as its code computes
// them (aten/src/ATen/core/CachingHostAllocator.h), which is not always what torch's
// docstring says; where the two differ we follow the code, so numbers equal torch's
// (bench/torch_compare/host_stats_check.py: every key equal to torch 2.11.0+cu130, git
// 70d99e99, on an H200):
// - "allocations.{current,peak,allocated,freed}" / "allocated_bytes.{...}": blocks obtained
//   for the pool (cudaHostAlloc, cudaHostRegister or the reserve segment) and not yet returned
//   by empty_host_cache, and their rounded bytes. As documented.
// - "active_requests.{...}": +1 at every hand-out (new or cached block). The docstring says it
//   drops "when the block becomes reusable after stream deps finish"; in fact it drops (by 1)
//   only for a block that was used on a stream, when its events are found complete (at the
//   next allocation, empty_host_cache, or by the pinned_use_background_threads thread). A
//   block freed with no stream use stays counted for good, even after empty_host_cache
//   returns it: alloc, free, alloc, free, empty_host_cache gives current 1, 1, 2, 2, 2.
// - "active_bytes.{...}": +size at every hand-out, and never lowered: where active_requests
//   drops by 1, torch calls decrease(size) with size == -1 (the "all sizes" argument of its
//   event loop) on a size_t, so current rises by 1 and freed falls by 1.
// - peaks of active_requests / active_bytes are sums of per-size-bucket peaks (torch keeps the
//   active figures per power-of-two bucket), so they can exceed any value current ever had.
// - "num_host_alloc" / "num_host_free": allocations.allocated / allocations.freed, so blocks,
//   not calls (a block carved from the reserve segment counts; the segment itself does not),
//   and reset with the accumulated figures.
// - "host_alloc_time.{total,max,min,count,avg}" / "host_free_time.{...}": microseconds in the
//   calls that obtain or return pinned memory (the reserve segment's one allocation included,
//   its blocks never). min is replaced while it is 0; reset_peak zeroes min and max,
//   reset_accumulated total and count; avg is total / count.
std::map<std::string, std::int64_t> host_memory_stats();
// Returns every cached, unused pinned block (torch._C._host_emptyCache), first looking at
// pending events as an allocation does. Blocks still waiting for device work stay. A block
// carved from the reserve segment is dropped the same way and its space is not reused.
void empty_host_cache();
// torch.cuda.reset_peak_host_memory_stats(): every peak to its current value (per bucket
// for the active figures), and the timings' min and max to 0.
void reset_peak_host_memory_stats();
// torch.cuda.reset_accumulated_host_memory_stats(): every "allocated" and "freed" to 0 (and so
// num_host_alloc and num_host_free), and the timings' total and count.
void reset_accumulated_host_memory_stats();

namespace host {
// `size` bytes of pinned host memory (size 0: nullptr). Throws cuda::Error when the backend
// cannot provide it.
void* allocate(std::size_t size);
// Returns a block from allocate(). nullptr is ignored; a pointer that is not a live block
// throws cuda::Error and changes nothing.
void free(void* ptr);
// Marks the block holding `ptr` as used by work on `stream`; false when `ptr` is not inside a
// live pinned block (pageable memory: nothing to track).
bool record_stream(void* ptr, const Stream& stream);
// True when `ptr` points into a live block of the caching host allocator.
bool is_pinned(const void* ptr);
}  // namespace host

}  // namespace cudascope::cuda
