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

// torch.cuda.host_memory_stats(), with PyTorch 2.11's keys and meanings:
// "allocations.{current,peak,allocated,freed}" / "allocated_bytes.{...}": blocks obtained from
// cudaHostAlloc and not yet returned (the pool), and their bytes;
// "active_requests.{...}" / "active_bytes.{...}": blocks handed out, counted until they are
// reusable (freed, and the stream work that used them done), and their rounded bytes;
// "num_host_alloc" / "num_host_free": cudaHostAlloc / cudaFreeHost calls;
// "host_alloc_time.{total,max,min,count,avg}" / "host_free_time.{...}": microseconds spent in
// those calls.
std::map<std::string, std::int64_t> host_memory_stats();
// Returns every cached, unused pinned block (torch._C._host_emptyCache). Blocks still waiting
// for device work stay.
void empty_host_cache();
void reset_peak_host_memory_stats();
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
