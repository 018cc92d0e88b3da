#pragma once
// An expandable segment: a large reserved address range whose pages (2 MiB for the small
// pool, 20 MiB for the large) are backed with physical memory on demand, through the
// backend's vm_reserve/vm_map/vm_unmap (cuMemAddressReserve/cuMemCreate/cuMemMap on
// cuda; reserve and commit on sim). Not thread-safe: the device lock guards it.

#include "../backend/backend.h"

#include <cstddef>
#include <vector>

namespace cudascope::cuda::detail::alloc {

struct Range {
  char* ptr;
  std::size_t size;
};

class ExpandableSegment {
 public:
  // A segment of `address_space` bytes, as PyTorch sizes it. The backend reserves that much
  // where it can; the sim device, whose address range is bounded, may reserve fewer pages
  // (halved until the reservation fits, never fewer than one). The segment's size stays
  // `address_space` either way: its unmapped tail, a free block, is as large as on a GPU, so
  // best fit orders it among the other unmapped blocks as PyTorch does; pages beyond the
  // reservation fail to map, as the device being out of memory does.
  ExpandableSegment(Backend& backend, int device, StreamHandle stream, std::size_t address_space,
                    std::size_t page_size);
  ~ExpandableSegment();
  ExpandableSegment(const ExpandableSegment&) = delete;
  ExpandableSegment& operator=(const ExpandableSegment&) = delete;

  // Maps the pages covering [range.ptr, range.ptr + range.size) (range.ptr page-aligned);
  // returns the range mapped, empty when the device is out of memory (nothing mapped then).
  Range map(Range range);
  // Unmaps the pages wholly inside `range`; returns what was unmapped (maybe empty).
  Range unmap(Range range);

  char* ptr() const noexcept { return base_; }
  std::size_t size() const noexcept { return pages_ * page_size_; }
  StreamHandle stream() const noexcept { return stream_; }

 private:
  std::size_t page_left(const char* p) const noexcept { return static_cast<std::size_t>(p - base_) / page_size_; }
  std::size_t page_right(const char* p) const noexcept {
    return (static_cast<std::size_t>(p - base_) + page_size_ - 1) / page_size_;
  }
  Range pages(std::size_t begin, std::size_t end) const noexcept {
    return {base_ + begin * page_size_, (end - begin) * page_size_};
  }

  Backend& backend_;
  int device_;
  StreamHandle stream_;
  std::size_t page_size_;
  std::size_t pages_ = 0;           // the segment's size in pages
  std::size_t reserved_pages_ = 0;  // the pages the backend reserved (<= pages_)
  char* base_ = nullptr;
  std::vector<bool> mapped_;
};

}  // namespace cudascope::cuda::detail::alloc
