#include "expandable_segment.h"

#include <cudascope/cuda/error.h>

#include <algorithm>

namespace cudascope::cuda::detail::alloc {

ExpandableSegment::ExpandableSegment(Backend& backend, int device, StreamHandle stream, std::size_t address_space,
                                     std::size_t page_size)
    : backend_(backend), device_(device), stream_(stream), page_size_(page_size) {
  pages_ = (address_space + page_size - 1) / page_size;
  reserved_pages_ = pages_;
  for (;;) {
    try {
      base_ = static_cast<char*>(backend_.vm_reserve(device_, reserved_pages_ * page_size_));
      break;
    } catch (const Error&) {
      if (reserved_pages_ <= 1) throw;
      reserved_pages_ /= 2;
    }
  }
  mapped_.assign(reserved_pages_, false);
}

ExpandableSegment::~ExpandableSegment() {
  for (std::size_t i = 0; i < reserved_pages_; ++i) {
    if (mapped_[i]) backend_.vm_unmap(device_, base_ + i * page_size_, page_size_);
  }
  backend_.vm_release(device_, base_, reserved_pages_ * page_size_);
}

Range ExpandableSegment::map(Range range) {
  const std::size_t begin = page_left(range.ptr);
  const std::size_t end = page_right(range.ptr + range.size);
  if (end > reserved_pages_) return pages(begin, begin);
  for (std::size_t i = begin; i < end; ++i) {
    // One physical allocation per page, as PyTorch, so any page can be unmapped alone.
    if (!backend_.vm_map(device_, base_ + i * page_size_, page_size_)) {
      for (std::size_t j = begin; j < i; ++j) {
        backend_.vm_unmap(device_, base_ + j * page_size_, page_size_);
        mapped_[j] = false;
      }
      return pages(begin, begin);
    }
    mapped_[i] = true;
  }
  return pages(begin, end);
}

Range ExpandableSegment::unmap(Range range) {
  const std::size_t begin = page_right(range.ptr);
  const std::size_t end = std::min(page_left(range.ptr + range.size), reserved_pages_);
  if (begin >= end) return {range.ptr, 0};
  // The memory may still be used by work queued on the segment's stream.
  backend_.stream_synchronize(device_, stream_);
  for (std::size_t i = begin; i < end; ++i) {
    backend_.vm_unmap(device_, base_ + i * page_size_, page_size_);
    mapped_[i] = false;
  }
  return pages(begin, end);
}

}  // namespace cudascope::cuda::detail::alloc
