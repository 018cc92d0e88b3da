#pragma once
// Where a simulated device's allocations go: the device virtual addresses the CUDA driver
// hands out for cudaMalloc and cuMemAddressReserve, modelled on the addresses PyTorch's
// allocator got on NVIDIA H100/H200 GPUs (tests/data/replay_*.segments.json.gz). The caching
// allocator breaks best-fit ties between equal-size free blocks by address, so the sim must
// place segments in the driver's relative order for replays to give PyTorch's memory_stats.
//
// Pure arithmetic on addresses (nothing is mapped here); SimMemory maps what this returns.
// Deterministic; not thread-safe (SimMemory holds its lock around every call).
//
// The policy, and the observations each rule comes from (sim_address_space.cpp has the
// details):
//  - The address space is used top down: cudaMalloc's first range lies highest and later ones
//    below it (every recording).
//  - cudaMalloc sub-allocates from chunks: reservations of whole 32 MiB units, aligned to
//    32 MiB. A new chunk is made only when no chunk has room; the rest of a chunk serves
//    later allocations (a 146 MiB segment's chunk ends at the next 32 MiB boundary and its
//    14 MiB tail takes the next 2 MiB segments).
//  - A new chunk is asked of the address space as the chunk plus one alignment unit less a
//    page, then trimmed to the 32 MiB boundary: it goes to the highest free range holding
//    that much, at the top. A free range of exactly the chunk's size is never reused (32 and
//    64 MiB holes stay empty while 32 and 64 MiB chunks go elsewhere).
//  - Among chunks, the newest is searched first; within a chunk, the smallest free range
//    that fits (lowest address on ties), from its start.
//  - A chunk whose last allocation is freed goes back to the address space, merged with
//    its free neighbours.
//  - The first chunk's lowest 6 MiB hold the driver's own allocations (every recording's
//    first segment starts 6 MiB above a 32 MiB boundary and nothing is ever placed below it).
//  - cuMemAddressReserve (expandable segments) takes its range from the same address space,
//    by the same ask-and-trim rule at the requested alignment (at least 2 MiB).
//  - Requests below 2 MiB (never made by the caching allocator) share 2 MiB pages taken by
//    the rule above, 512-byte aligned, lowest address first: an assumption, not fitted.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace cudascope::cuda::detail {

class SimAddressSpace {
 public:
  static constexpr std::size_t kPage = 2 << 20;              // the driver's allocation granularity
  static constexpr std::size_t kChunkUnit = 32 << 20;        // cudaMalloc's reservation unit and alignment
  static constexpr std::size_t kDriverReserved = 6 << 20;    // the first chunk's bytes in the driver's use
  static constexpr std::size_t kSmallAlignment = 512;        // requests below one page
  static constexpr std::size_t kOsPage = 4096;               // what the address space rounds to

  // A range newly taken from or given back to the address space (SimMemory makes it
  // accessible or not).
  using Range = std::pair<std::uintptr_t, std::size_t>;

  // The address space [base, base + span); both multiples of kChunkUnit.
  SimAddressSpace(std::uintptr_t base, std::size_t span);

  struct Allocation {
    std::uintptr_t address = 0;       // 0: no room left in the address space
    std::optional<Range> new_chunk;   // a chunk made for this allocation
  };
  // cudaMalloc of `bytes` (> 0).
  Allocation allocate(std::size_t bytes);
  // cudaFree of an address allocate returned: the chunk given back, if this emptied it.
  // Returns std::nullopt as well for an address that is not allocated (`known` says which).
  std::optional<Range> release(std::uintptr_t address, bool* known = nullptr);

  // cuMemAddressReserve of `bytes` at `alignment`; 0 when no range is left.
  std::uintptr_t reserve(std::size_t bytes, std::size_t alignment);
  // cuMemAddressFree; false for a range that was not reserved. `bytes` = what was reserved.
  bool unreserve(std::uintptr_t address, std::size_t* bytes = nullptr);

  // The chunk the driver made at start-up (its own allocations at the bottom): accessible
  // from the start, and never given back.
  Range initial_chunk() const { return initial_chunk_; }
  std::uintptr_t base() const { return base_; }
  std::size_t span() const { return span_; }

 private:
  struct Chunk {
    std::size_t size = 0;
    std::map<std::uintptr_t, std::size_t> free;  // start -> size, coalesced
    std::size_t live = 0;                        // allocations in it (the driver's own count one)
    std::uint64_t serial = 0;                    // creation order: newest searched first
  };
  struct Placed {
    std::uintptr_t chunk = 0;
    std::size_t size = 0;  // the bytes taken in the chunk
  };

  Range initial_chunk_{0, 0};
  std::uintptr_t take_from_address_space(std::size_t bytes, std::size_t alignment);
  std::uintptr_t make_chunk(std::size_t bytes);
  std::uintptr_t place_in_chunks(std::size_t bytes);
  void take_in_chunk(std::uintptr_t chunk, std::uintptr_t at, std::size_t bytes);
  std::uintptr_t allocate_small(std::size_t bytes, std::optional<Range>& new_chunk);
  std::optional<Range> release_in_chunk(std::uintptr_t chunk, std::uintptr_t at, std::size_t bytes);

  std::uintptr_t base_;
  std::size_t span_;
  std::map<std::uintptr_t, std::size_t> gaps_;          // the address space's free ranges
  std::map<std::uintptr_t, Chunk> chunks_;              // base -> chunk
  std::map<std::uint64_t, std::uintptr_t> by_serial_;   // serial -> chunk base
  std::uint64_t next_serial_ = 0;
  std::map<std::uintptr_t, Placed> allocations_;        // cudaMalloc'd ranges of a page or more
  std::map<std::uintptr_t, std::map<std::uintptr_t, std::size_t>> small_pages_;  // page -> free ranges
  std::map<std::uintptr_t, std::size_t> small_allocations_;  // address -> bytes taken in its page
  std::map<std::uintptr_t, std::size_t> reservations_;  // cuMemAddressReserve'd ranges
};

}  // namespace cudascope::cuda::detail
