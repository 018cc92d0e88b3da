#include "sim_address_space.h"

#include <iterator>

namespace cudascope::cuda::detail {
namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
std::uintptr_t align_up(std::uintptr_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Takes [at, at + bytes) out of the free range that holds it.
void carve(std::map<std::uintptr_t, std::size_t>& free, std::uintptr_t at, std::size_t bytes) {
  auto it = std::prev(free.upper_bound(at));
  const std::uintptr_t start = it->first;
  const std::size_t size = it->second;
  free.erase(it);
  if (at > start) free.emplace(start, at - start);
  if (start + size > at + bytes) free.emplace(at + bytes, start + size - at - bytes);
}

// Gives [start, start + bytes) back, merged with free neighbours.
void merge(std::map<std::uintptr_t, std::size_t>& free, std::uintptr_t start, std::size_t bytes) {
  auto next = free.lower_bound(start);
  if (next != free.end() && start + bytes == next->first) {
    bytes += next->second;
    next = free.erase(next);
  }
  if (next != free.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == start) {
      previous->second += bytes;
      return;
    }
  }
  free.emplace(start, bytes);
}

}  // namespace

SimAddressSpace::SimAddressSpace(std::uintptr_t base, std::size_t span) : base_(base), span_(span) {
  gaps_.emplace(base_, span_);
  // The driver's own allocations at the bottom of the first chunk: in all four recordings
  // fitted, the first segment starts 6 MiB above a 32 MiB boundary, the chunk's next 2 MiB
  // segments follow it upwards, and nothing is ever placed in those 6 MiB.
  const std::uintptr_t first = make_chunk(kChunkUnit);
  Chunk& chunk = chunks_.at(first);
  carve(chunk.free, first, kDriverReserved);
  chunk.live = 1;  // never given back
  initial_chunk_ = Range{first, kChunkUnit};
}

// The address space as the driver gets it from the OS (its device addresses are the
// process's own, reserved with mmap): a request of `bytes` at `alignment` asks for
// bytes + alignment - one OS page, which Linux places at the top of the highest free range
// that holds it, and keeps the aligned part. Hence the top-down order, and a free range of
// exactly the chunk's size never being reused (default_s1: a freed 32 MiB chunk left empty
// while the next 32 MiB chunk went below the lowest one; roundup_int_s3: two 64 MiB holes
// passed over for a 64 MiB chunk placed at the top of a 160 MiB hole higher up than a 96 MiB
// one). A chunk given back merges with the space below the lowest chunk (gc_s6: a 128 MiB
// chunk reused exactly the addresses freed at the bottom).
std::uintptr_t SimAddressSpace::take_from_address_space(std::size_t bytes, std::size_t alignment) {
  const std::size_t asked = bytes + alignment - kOsPage;
  for (auto it = gaps_.rbegin(); it != gaps_.rend(); ++it) {
    if (it->second < asked) continue;
    const std::uintptr_t top = it->first + it->second;
    const std::uintptr_t start = align_up(top - asked, alignment);
    carve(gaps_, start, bytes);
    return start;
  }
  return 0;
}

std::uintptr_t SimAddressSpace::make_chunk(std::size_t bytes) {
  const std::size_t size = round_up(bytes, kChunkUnit);
  const std::uintptr_t start = take_from_address_space(size, kChunkUnit);
  if (start == 0) return 0;
  Chunk chunk;
  chunk.size = size;
  chunk.free.emplace(start, size);
  chunk.serial = next_serial_++;
  by_serial_.emplace(chunk.serial, start);
  chunks_.emplace(start, std::move(chunk));
  return start;
}

// Newest chunk first (max_split_s2: a 16 MiB segment went to the 18 MiB tail of the chunk
// made last, not to an older chunk's 18 MiB tail at a lower address); within a chunk the
// smallest free range that fits (default_s1: a 14 MiB segment took a 14 MiB hole above an
// 88 MiB one in the same chunk), from its start (each chunk fills upwards).
std::uintptr_t SimAddressSpace::place_in_chunks(std::size_t bytes) {
  for (auto it = by_serial_.rbegin(); it != by_serial_.rend(); ++it) {
    Chunk& chunk = chunks_.at(it->second);
    std::uintptr_t best = 0;
    std::size_t best_size = 0;
    for (const auto& [start, size] : chunk.free) {
      if (size >= bytes && (best == 0 || size < best_size)) {
        best = start;
        best_size = size;
      }
    }
    if (best != 0) {
      take_in_chunk(it->second, best, bytes);
      return best;
    }
  }
  return 0;
}

void SimAddressSpace::take_in_chunk(std::uintptr_t chunk, std::uintptr_t at, std::size_t bytes) {
  Chunk& c = chunks_.at(chunk);
  carve(c.free, at, bytes);
  c.live += 1;
  allocations_.emplace(at, Placed{chunk, bytes});
}

SimAddressSpace::Allocation SimAddressSpace::allocate(std::size_t bytes) {
  Allocation out;
  if (bytes < kPage) {
    out.address = allocate_small(bytes, out.new_chunk);
    return out;
  }
  const std::size_t size = round_up(bytes, kPage);
  out.address = place_in_chunks(size);
  if (out.address != 0) return out;
  const std::uintptr_t chunk = make_chunk(size);
  if (chunk == 0) return out;
  out.new_chunk = Range{chunk, chunks_.at(chunk).size};
  take_in_chunk(chunk, chunk, size);
  out.address = chunk;
  return out;
}

// Below a page: 512-byte pieces of shared pages, lowest address first. Not fitted (PyTorch
// never asks cudaMalloc for less than 2 MiB); it keeps such requests from breaking the page
// alignment of the segments around them.
std::uintptr_t SimAddressSpace::allocate_small(std::size_t bytes, std::optional<Range>& new_chunk) {
  const std::size_t size = round_up(bytes, kSmallAlignment);
  for (auto& [page, free] : small_pages_) {
    for (const auto& [start, length] : free) {
      if (length >= size) {
        const std::uintptr_t at = start;
        carve(free, at, size);
        small_allocations_.emplace(at, size);
        return at;
      }
    }
  }
  Allocation page = allocate(kPage);
  if (page.address == 0) return 0;
  new_chunk = page.new_chunk;
  auto& free = small_pages_[page.address];
  free.emplace(page.address + size, kPage - size);
  small_allocations_.emplace(page.address, size);
  return page.address;
}

std::optional<SimAddressSpace::Range> SimAddressSpace::release(std::uintptr_t address, bool* known) {
  if (known != nullptr) *known = true;
  if (auto small = small_allocations_.find(address); small != small_allocations_.end()) {
    auto page = std::prev(small_pages_.upper_bound(address));
    merge(page->second, address, small->second);
    small_allocations_.erase(small);
    if (page->second.size() != 1 || page->second.begin()->second != kPage) return std::nullopt;
    const std::uintptr_t page_start = page->first;
    small_pages_.erase(page);
    return release(page_start);
  }
  const auto found = allocations_.find(address);
  if (found == allocations_.end() || small_pages_.count(address) != 0) {
    if (known != nullptr) *known = false;
    return std::nullopt;
  }
  const Placed placed = found->second;
  allocations_.erase(found);
  return release_in_chunk(placed.chunk, address, placed.size);
}

std::optional<SimAddressSpace::Range> SimAddressSpace::release_in_chunk(std::uintptr_t chunk, std::uintptr_t at,
                                                                         std::size_t bytes) {
  Chunk& c = chunks_.at(chunk);
  merge(c.free, at, bytes);
  if (--c.live > 0) return std::nullopt;
  const Range whole{chunk, c.size};
  by_serial_.erase(c.serial);
  chunks_.erase(chunk);
  merge(gaps_, whole.first, whole.second);
  return whole;
}

std::uintptr_t SimAddressSpace::reserve(std::size_t bytes, std::size_t alignment) {
  const std::size_t align = alignment < kPage ? kPage : round_up(alignment, kPage);
  const std::size_t size = round_up(bytes, kPage);
  const std::uintptr_t start = take_from_address_space(size, align);
  if (start != 0) reservations_.emplace(start, size);
  return start;
}

bool SimAddressSpace::unreserve(std::uintptr_t address, std::size_t* bytes) {
  const auto found = reservations_.find(address);
  if (found == reservations_.end()) return false;
  if (bytes != nullptr) *bytes = found->second;
  merge(gaps_, found->first, found->second);
  reservations_.erase(found);
  return true;
}

}  // namespace cudascope::cuda::detail
