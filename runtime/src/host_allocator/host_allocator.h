#pragma once
// The caching host allocator behind host_memory.h, as PyTorch's CachingHostAllocator:
// power-of-two blocks, a free list per size, and event-tracked reuse. One instance serves the
// process (process_host_allocator()); tests build their own on the process's backend.
//
// Thread-safety: every method is thread-safe (one mutex; the backend's pinned alloc and free
// run outside it).

#include "../backend/backend.h"

#include <cudascope/cuda/memory.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cudascope::cuda::detail {

// PyTorch's DurationStat, in microseconds.
struct DurationStat {
  std::int64_t total = 0, max = 0, min = 0, count = 0;
  void add(std::int64_t us) noexcept;
};

struct HostStats {
  MemoryStat active_requests, active_bytes, allocations, allocated_bytes;
  std::int64_t num_host_alloc = 0, num_host_free = 0;
  DurationStat host_alloc_time, host_free_time;
};

class CachingHostAllocator {
 public:
  explicit CachingHostAllocator(Backend& backend);
  ~CachingHostAllocator();  // returns every block it still holds
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  void* allocate(std::size_t size);
  void free(void* ptr);
  bool record_stream(void* ptr, int device, StreamHandle stream);
  bool is_pinned(const void* ptr) const;
  void empty_cache();
  HostStats stats() const;
  void reset_peak();
  void reset_accumulated();

  // Beyond torch, for tests: blocks waiting for events, blocks cached free, and "" when the
  // blocks, free lists, pending events and statistics agree (else what disagrees).
  std::size_t pending_blocks() const;
  std::size_t cached_blocks() const;
  std::string check_invariants() const;

 private:
  struct Block {
    void* ptr = nullptr;
    std::size_t size = 0;
    bool allocated = false;
    int event_count = 0;
    std::vector<std::pair<int, StreamHandle>> streams;  // used on, since it was handed out
  };
  struct PendingEvent {
    int device;
    EventHandle event;
    Block* block;
  };
  static constexpr std::size_t kBins = 64;

  void process_events_locked();
  void release_locked(Block& block);
  EventHandle take_event_locked(int device);
  void notify(int action, const Block& block) const;
  Block* block_containing_locked(const void* ptr) const;

  Backend& backend_;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::unique_ptr<Block>> blocks_;  // by address
  std::array<std::vector<Block*>, kBins> free_lists_;
  std::deque<PendingEvent> pending_;
  std::map<int, std::vector<EventHandle>> event_pool_;  // per device
  HostStats stats_;
};

CachingHostAllocator& process_host_allocator();
// host_memory_stats()'s keys and values for `stats`.
std::map<std::string, std::int64_t> host_stats_map(const HostStats& stats);

}  // namespace cudascope::cuda::detail
