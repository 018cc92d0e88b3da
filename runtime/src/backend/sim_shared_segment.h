#pragma once
// Sim device memory shared between processes (CUDA IPC on the sim backend). A shared
// segment is moved in place into a POSIX shared-memory object, so the producer keeps its
// addresses and contents while another process maps the same pages into its own simulated
// device. Not thread-safe: SimMemory's lock guards the calls.

#include <cstddef>
#include <string>

namespace cudascope::cuda::detail {

// Copies [ptr, ptr+size) into a new shared-memory object and maps it over the same range;
// returns the object's name. `ptr` and `size` are multiples of the page size.
std::string share_in_place(void* ptr, std::size_t size);
// Undoes share_in_place when the segment is freed: private, zeroed pages again, and the
// name removed (processes that mapped it keep their mapping, as CUDA keeps opened memory).
void unshare_in_place(void* ptr, std::size_t size, const std::string& name);
// Maps the object `name` (of `size` bytes) over the reserved, inaccessible range at `at`.
// Throws cuda::Error (kInvalidResourceHandle) when the object is gone.
void map_shared_at(void* at, std::size_t size, const std::string& name);
// Makes [at, at+size) an inaccessible reservation again.
void unmap_shared_at(void* at, std::size_t size);

}  // namespace cudascope::cuda::detail
