#pragma once
// The OutOfMemoryError message: what was asked for, what the device has, and how the
// allocator's memory is used (including the largest free cached block, a fragmentation
// figure PyTorch does not give).

#include <cstddef>
#include <cstdint>
#include <string>

namespace cudascope::cuda::detail::alloc {

struct OomFacts {
  int device = 0;
  std::size_t requested = 0;
  std::size_t device_free = 0;
  std::size_t device_total = 0;
  std::size_t allowed = 0;  // 0: no memory fraction set
  std::size_t allocated = 0;
  std::size_t reserved = 0;
  std::size_t largest_free_block = 0;
};

// PyTorch's wording, sizes in util::format_size.
std::string oom_message(const OomFacts& facts);

}  // namespace cudascope::cuda::detail::alloc
