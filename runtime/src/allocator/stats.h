#pragma once
// The allocator's counters, as PyTorch's DeviceStats: each Stat has current, peak,
// allocated (cumulative increases, derived) and freed (cumulative decreases); arrays hold the
// aggregate and the small and large pools. Not thread-safe: the device lock guards them.

#include <cudascope/cuda/memory.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace cudascope::cuda::detail::alloc {

struct Stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t freed = 0;
  // `current` when reset_accumulated last ran. The cumulative increases are derived from it
  // (allocated - freed == current - base always holds), so that increase(), which runs
  // about ten times per malloc, writes two fields instead of three.
  std::int64_t base = 0;

  void increase(std::int64_t amount) noexcept {
    current += amount;
    peak = current > peak ? current : peak;
  }
  void decrease(std::int64_t amount) noexcept {
    current -= amount;
    freed += amount;
  }
  // The sum of every increase since the last reset_accumulated (PyTorch's `allocated`).
  std::int64_t allocated() const noexcept { return current - base + freed; }
  void reset_accumulated() noexcept {
    base = current;
    freed = 0;
  }
  void reset_peak() noexcept { peak = current; }
};

enum StatType : int { kAggregate = 0, kSmallPool = 1, kLargePool = 2 };

struct StatArray {
  std::array<Stat, 3> stat;
  // Changes the aggregate and the pool's entry together, as PyTorch's stat_types do.
  void increase(int pool, std::int64_t amount) noexcept {
    stat[kAggregate].increase(amount);
    stat[pool].increase(amount);
  }
  void decrease(int pool, std::int64_t amount) noexcept {
    stat[kAggregate].decrease(amount);
    stat[pool].decrease(amount);
  }
  const Stat& operator[](int i) const noexcept { return stat[i]; }
};

struct DeviceStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  std::int64_t num_alloc_retries = 0;
  std::int64_t num_ooms = 0;
  Stat oversize_allocations, oversize_segments;
  std::int64_t num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;

  void reset_accumulated() noexcept;
  void reset_peak() noexcept;
};

// Per-stream figures (beyond PyTorch), aggregate over both pools.
struct StreamStats {
  Stat allocation, allocated_bytes, requested_bytes, active, active_bytes, segment, reserved_bytes;
};

// The public struct forms (memory.h); largest_free_block is left 0 for the caller to fill.
AllocatorStats to_public(const DeviceStats& stats);
StreamAllocatorStats to_public(const StreamStats& stats);

// PyTorch's flat memory_stats() keys and values; max_split_size -1 for "unlimited".
std::map<std::string, std::int64_t> to_stats_map(const DeviceStats& stats, std::int64_t max_split_size);
std::map<std::string, std::int64_t> to_stats_map(const StreamStats& stats);

}  // namespace cudascope::cuda::detail::alloc
