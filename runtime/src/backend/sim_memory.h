#pragma once
// A simulated device's memory: one address range reserved with MAP_NORESERVE (so it costs
// no RAM until touched), in which cudaMalloc and cuMemAddressReserve get the addresses the
// CUDA driver would give them (sim_address_space.h: deterministic, per device), and
// capacity charged for what cudaMalloc takes and cuMemMap maps.

#include "sim_address_space.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace cudascope::cuda::detail {

class SimMemory {
 public:
  SimMemory(int device, std::size_t capacity);
  ~SimMemory();
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  static constexpr std::size_t kAlignment = 512;      // what allocations are charged in
  static constexpr std::size_t kGranularity = 2 << 20;  // cuMemGetAllocationGranularity

  void* allocate(std::size_t size);  // nullptr when out of capacity
  // Returns the bytes released. Throws cuda::Error (invalid value) for a pointer this device
  // did not allocate.
  std::size_t release(void* ptr);

  void* reserve(std::size_t size);
  void unreserve(void* base, std::size_t size);
  bool map(void* ptr, std::size_t size);
  void unmap(void* ptr, std::size_t size);

  // CUDA IPC (sim_shared_segment.h). share: makes the allocation at `base` visible to other
  // processes and returns its shared-memory name and size (the same name while it lives);
  // throws for a pointer that is not an allocation's start. open_shared maps another
  // process's segment into this device's address space (not charged to the capacity, as
  // CUDA does not charge opened memory to the importer); close_shared unmaps it.
  std::pair<std::string, std::size_t> share(void* base);
  bool is_shared(const void* base) const;
  void* open_shared(const std::string& name, std::size_t size);
  void close_shared(void* ptr);

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t used() const;
  bool owns(const void* ptr) const noexcept;

 private:
  void protect(std::pair<std::uintptr_t, std::size_t> range, int protection, const char* call);

  const int device_;
  const std::size_t capacity_;
  std::uintptr_t base_ = 0;
  std::size_t span_ = 0;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::optional<SimAddressSpace> space_;  // set once the range is mapped
  std::unordered_map<std::uintptr_t, std::size_t> allocations_;  // cudaMalloc: start -> bytes charged
  std::unordered_map<std::uintptr_t, std::string> shared_;  // allocations moved to shared memory
  std::unordered_map<std::uintptr_t, std::size_t> opened_;  // other processes' segments mapped here
};

// Parses a byte count such as "16GiB", "512MiB", "8G", "1048576"; throws cuda::Error
// naming `what` and the value when it cannot.
std::size_t parse_byte_size(const char* text, const char* what);

}  // namespace cudascope::cuda::detail
