#include "sim_memory.h"
#include "sim_shared_segment.h"

#include "../check.h"

#include <cudascope/util/byte_format.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>

namespace cudascope::cuda::detail {
namespace {

// Each device gets its own range of address space at a fixed place when the kernel allows
// it, so addresses repeat from run to run (replays and snapshots compare equal).
constexpr std::uintptr_t kFirstDeviceBase = 0x200000000000ULL;
constexpr std::uintptr_t kDeviceSpan = 0x40000000000ULL;  // 4 TiB per device

// The address range of a device of `capacity` bytes: room for cudaMalloc's chunks and the
// gaps between them (8x the capacity) and for expandable segments, each of which reserves
// 1 1/8 of the device as PyTorch does on a GPU (two pools per stream: 24 segments fit), at
// least 64 GiB and at most the device's span. A segment whose reservation finds no room
// is reserved smaller, and a replay that maps past it differs from the GPU's.
std::size_t address_span(std::size_t capacity) {
  constexpr std::size_t kMin = std::size_t{64} << 30;
  constexpr std::size_t kPerCapacity = 8 + 24 * 9 / 8;
  std::size_t span = capacity > kDeviceSpan / kPerCapacity ? kDeviceSpan : capacity * kPerCapacity;
  if (span < kMin) span = kMin;
  return span / SimAddressSpace::kChunkUnit * SimAddressSpace::kChunkUnit;
}

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// ThreadSanitizer reserves the fixed addresses for its shadow memory: take any address there.
#if defined(__SANITIZE_THREAD__)
constexpr bool kFixedAddresses = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kFixedAddresses = false;
#else
constexpr bool kFixedAddresses = true;
#endif
#else
constexpr bool kFixedAddresses = true;
#endif

// The range at `hint` if it is free, else anywhere; 0 when the address space has no room.
std::uintptr_t try_map_range(std::uintptr_t hint, std::size_t size, int protection) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (!kFixedAddresses) hint = 0;
#ifdef MAP_FIXED_NOREPLACE
  if (hint != 0) {
    void* at = mmap(reinterpret_cast<void*>(hint), size, protection, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (at != MAP_FAILED) return reinterpret_cast<std::uintptr_t>(at);
  }
#endif
  void* anywhere = mmap(reinterpret_cast<void*>(hint), size, protection, flags, -1, 0);
  return anywhere == MAP_FAILED ? 0 : reinterpret_cast<std::uintptr_t>(anywhere);
}

// Reserves the device's range: address_span() when the process has that much address space,
// else halved down to twice the capacity (ThreadSanitizer leaves a process far less than
// the usual 128 TiB, too little for 8x on two devices of 128 GiB).
std::pair<std::uintptr_t, std::size_t> reserve_device_range(int device, std::size_t capacity) {
  const std::uintptr_t hint = kFirstDeviceBase + static_cast<std::uintptr_t>(device) * kDeviceSpan;
  const std::size_t smallest = std::max(round_up(2 * capacity, SimAddressSpace::kChunkUnit), 2 * SimAddressSpace::kChunkUnit);
  for (std::size_t span = address_span(capacity);; span /= 2) {
    span = std::max(round_up(span, SimAddressSpace::kChunkUnit), smallest);
    if (const std::uintptr_t base = try_map_range(hint, span, PROT_NONE)) return {base, span};
    if (span == smallest) {
      // Not an out-of-memory error: the allocator would take that for a full device and
      // carry on (a replay of all-zero figures); nothing can run on this device.
      const int why = errno;
      throw_error(error_code::kInitializationError, "mmap", __FILE__, __LINE__,
                  "cannot reserve " + util::format_bytes(span) + " of address space for sim device " +
                      std::to_string(device) + " (twice its capacity of " + util::format_bytes(capacity) +
                      "): " + std::strerror(why) +
                      "; lower CUDASCOPE_SIM_MEMORY (e.g. CUDASCOPE_SIM_MEMORY=1GiB) or raise the "
                      "address-space limit (ulimit -v)");
    }
  }
}

}  // namespace

SimMemory::SimMemory(int device, std::size_t capacity) : device_(device), capacity_(capacity) {
  // Nothing is accessible until cudaMalloc or cuMemMap makes it so.
  std::tie(base_, span_) = reserve_device_range(device, capacity_);
  // The policy needs chunk-aligned ends; mmap's pages may sit anywhere without a fixed hint.
  const std::uintptr_t first = (base_ + SimAddressSpace::kChunkUnit - 1) / SimAddressSpace::kChunkUnit *
                               SimAddressSpace::kChunkUnit;
  space_.emplace(first, (base_ + span_ - first) / SimAddressSpace::kChunkUnit * SimAddressSpace::kChunkUnit);
  protect(space_->initial_chunk(), PROT_READ | PROT_WRITE, "cudaMalloc");
}

SimMemory::~SimMemory() { munmap(reinterpret_cast<void*>(base_), span_); }

void* SimMemory::allocate(std::size_t size) {
  if (size > capacity_) return nullptr;  // before rounding, which could wrap past SIZE_MAX
  const std::size_t charged = round_up(size == 0 ? 1 : size, kAlignment);
  std::lock_guard lock(mutex_);
  if (charged > capacity_ - used_) return nullptr;
  const SimAddressSpace::Allocation placed = space_->allocate(charged);
  if (placed.address == 0) return nullptr;
  if (placed.new_chunk) protect(*placed.new_chunk, PROT_READ | PROT_WRITE, "cudaMalloc");
  allocations_.emplace(placed.address, charged);
  used_ += charged;
  return reinterpret_cast<void*>(placed.address);
}

std::size_t SimMemory::release(void* ptr) {
  const auto start = reinterpret_cast<std::uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  const auto found = allocations_.find(start);
  CUDASCOPE_CHECK(found != allocations_.end(), error_code::kInvalidValue, "cudaFree",
                  "pointer " + std::to_string(start) + " was not allocated on sim device " + std::to_string(device_));
  const std::size_t size = found->second;
  allocations_.erase(found);
  if (auto shared = shared_.find(start); shared != shared_.end()) {
    unshare_in_place(ptr, size, shared->second);
    shared_.erase(shared);
  } else if (size >= SimAddressSpace::kPage) {
    // Give the RAM back; the range stays reserved. (Smaller allocations share pages.)
    madvise(ptr, size, MADV_DONTNEED);
  }
  if (const auto emptied = space_->release(start)) protect(*emptied, PROT_NONE, "cudaFree");
  used_ -= size;
  return size;
}

void* SimMemory::reserve(std::size_t size) {
  std::lock_guard lock(mutex_);
  const std::uintptr_t start = space_->reserve(size, kGranularity);
  CUDASCOPE_CHECK(start != 0, error_code::kMemoryAllocation, "cuMemAddressReserve",
                  "sim device " + std::to_string(device_) + " has no address range of " + std::to_string(size) +
                      " bytes left");
  return reinterpret_cast<void*>(start);
}

void SimMemory::unreserve(void* base, std::size_t size) {
  (void)size;
  std::lock_guard lock(mutex_);
  CUDASCOPE_CHECK(space_->unreserve(reinterpret_cast<std::uintptr_t>(base)), error_code::kInvalidValue,
                  "cuMemAddressFree", "address range was not reserved on sim device " + std::to_string(device_));
}

bool SimMemory::map(void* ptr, std::size_t size) {
  std::lock_guard lock(mutex_);
  if (size > capacity_ - used_) return false;
  protect({reinterpret_cast<std::uintptr_t>(ptr), size}, PROT_READ | PROT_WRITE, "cuMemMap");
  used_ += size;
  return true;
}

void SimMemory::unmap(void* ptr, std::size_t size) {
  std::lock_guard lock(mutex_);
  madvise(ptr, size, MADV_DONTNEED);
  protect({reinterpret_cast<std::uintptr_t>(ptr), size}, PROT_NONE, "cuMemUnmap");
  used_ -= size;
}

void SimMemory::protect(std::pair<std::uintptr_t, std::size_t> range, int protection, const char* call) {
  CUDASCOPE_CHECK(mprotect(reinterpret_cast<void*>(range.first), range.second, protection) == 0,
                  error_code::kInvalidValue, call, std::strerror(errno));
}

std::pair<std::string, std::size_t> SimMemory::share(void* base) {
  const auto start = reinterpret_cast<std::uintptr_t>(base);
  std::lock_guard lock(mutex_);
  const auto found = allocations_.find(start);
  CUDASCOPE_CHECK(found != allocations_.end(), error_code::kInvalidValue, "cudaIpcGetMemHandle",
                  "pointer " + std::to_string(start) + " is not the start of an allocation on sim device " +
                      std::to_string(device_));
  if (auto shared = shared_.find(start); shared != shared_.end()) return {shared->second, found->second};
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  CUDASCOPE_CHECK(start % page == 0 && found->second % page == 0, error_code::kInvalidValue, "cudaIpcGetMemHandle",
                  "sim device memory is shared by whole pages; the allocation of " + std::to_string(found->second) +
                      " bytes is not page-aligned (the caching allocator's segments always are)");
  std::string name = share_in_place(base, found->second);
  shared_.emplace(start, name);
  return {std::move(name), found->second};
}

bool SimMemory::is_shared(const void* base) const {
  std::lock_guard lock(mutex_);
  return shared_.count(reinterpret_cast<std::uintptr_t>(base)) != 0;
}

void* SimMemory::open_shared(const std::string& name, std::size_t size) {
  void* at = reserve(size);
  try {
    map_shared_at(at, size, name);
  } catch (...) {
    unreserve(at, size);
    throw;
  }
  std::lock_guard lock(mutex_);
  opened_.emplace(reinterpret_cast<std::uintptr_t>(at), size);
  return at;
}

void SimMemory::close_shared(void* ptr) {
  std::size_t size = 0;
  {
    std::lock_guard lock(mutex_);
    const auto found = opened_.find(reinterpret_cast<std::uintptr_t>(ptr));
    CUDASCOPE_CHECK(found != opened_.end(), error_code::kInvalidValue, "cudaIpcCloseMemHandle",
                    "pointer was not opened with cudaIpcOpenMemHandle on sim device " + std::to_string(device_));
    size = found->second;
    opened_.erase(found);
  }
  unmap_shared_at(ptr, size);
  unreserve(ptr, size);
}

std::size_t SimMemory::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

bool SimMemory::owns(const void* ptr) const noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  return address >= base_ && address < base_ + span_;
}

std::size_t parse_byte_size(const char* text, const char* what) {
  uint64_t size = 0;
  if (!util::parse_byte_size(text, size)) {
    throw_error(error_code::kInvalidValue, what, __FILE__, __LINE__,
                std::string(what) + "='" + text + "' is not a byte size such as 16GiB, 512MiB or 1048576");
  }
  if (size == 0 || size > (256ULL << 30)) {
    throw_error(error_code::kInvalidValue, what, __FILE__, __LINE__,
                std::string(what) + "='" + text + "' must be between 1 byte and 256GiB");
  }
  return static_cast<std::size_t>(size);
}

}  // namespace cudascope::cuda::detail
