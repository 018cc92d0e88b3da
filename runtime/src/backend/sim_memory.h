#pragma once
// A simulated device's memory: a fixed address range reserved with MAP_NORESERVE (so
// capacity costs no RAM until touched), first-fit allocation by address so addresses are
// deterministic, and virtual-memory reservations for expandable segments charged against
// the same capacity when mapped.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace cudascope::cuda::detail {

class SimMemory {
 public:
  SimMemory(int device, std::size_t capacity);
  ~SimMemory();
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  static constexpr std::size_t kAlignment = 512;
  static constexpr std::size_t kGranularity = 2 << 20;

  void* allocate(std::size_t size);  // nullptr when out of capacity
  // Throws cuda::Error (invalid value) for a pointer this device did not allocate.
  void release(void* ptr);

  void* reserve(std::size_t size);
  void unreserve(void* base, std::size_t size);
  bool map(void* ptr, std::size_t size);
  void unmap(void* ptr, std::size_t size);

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t used() const;
  bool owns(const void* ptr) const noexcept;

 private:
  const int device_;
  const std::size_t capacity_;
  std::uintptr_t heap_base_ = 0;
  std::uintptr_t vm_base_ = 0;
  std::size_t vm_span_ = 0;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::map<std::uintptr_t, std::size_t> free_ranges_;   // heap: offset -> size, coalesced
  std::unordered_map<std::uintptr_t, std::size_t> allocations_;
  std::map<std::uintptr_t, std::size_t> vm_free_;       // vm address space: start -> size
  std::map<std::uintptr_t, std::size_t> vm_reserved_;   // start -> size
};

// Parses a byte count such as "16GiB", "512MiB", "8G", "1048576"; throws cuda::Error
// naming `what` and the value when it cannot.
std::size_t parse_byte_size(const char* text, const char* what);

}  // namespace cudascope::cuda::detail
