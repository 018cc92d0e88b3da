#pragma once
// The caching host allocator behind host_memory.h, as PyTorch's CachingHostAllocator:
// power-of-two blocks, a free list per size, and event-tracked reuse, with PyTorch's pinned_*
// settings (HostAllocatorOptions). One instance serves the process (process_host_allocator(),
// which reads the settings from the allocator configuration at each use); tests build their
// own on the process's backend with fixed options.
//
// Statistics are kept as PyTorch 2.11 keeps them (aten/src/ATen/core/CachingHostAllocator.h,
// HostStatsStaged): "allocations" / "allocated_bytes" as one figure each, the active figures
// per power-of-two size bucket, summed (peaks included) when read. host_memory.h says what
// the figures do, oddities included.
//
// Thread-safety: every method is thread-safe (one mutex; the backend's pinned alloc, register
// and free run outside it).

#include "../backend/backend.h"

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/memory.h>

#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cudascope::cuda::detail {

// PyTorch's DurationStat (c10/core/Allocator.h), in microseconds, with its rules: `min` is
// replaced while it is 0 (so a 0 us call does not stick), reset_peak zeroes min and max,
// reset_accumulated zeroes total and count.
struct DurationStat {
  std::int64_t total = 0, max = 0, min = 0, count = 0;
  void add(std::int64_t us) noexcept;
};

// What host_memory_stats() reports (PyTorch's HostStats).
struct HostStats {
  MemoryStat active_requests, active_bytes, allocations, allocated_bytes;
  std::int64_t num_host_alloc = 0, num_host_free = 0;
  DurationStat host_alloc_time, host_free_time;
};

// The allocator configuration's pinned_* keys (allocator_config.h says what each does).
struct HostAllocatorOptions {
  bool use_host_register = false;        // pinned_use_cuda_host_register
  std::size_t num_register_threads = 1;  // pinned_num_register_threads
  bool use_background_threads = false;   // pinned_use_background_threads
  std::size_t reserve_segment_bytes = 0;  // pinned_reserve_segment_size_mb, in bytes
};

class CachingHostAllocator {
 public:
  using OptionsSource = HostAllocatorOptions (*)();
  explicit CachingHostAllocator(Backend& backend, HostAllocatorOptions options = {});
  // Options read from `source` at each use (the process's allocator configuration, which
  // set_allocator_settings may change); the reserve segment's size is read once.
  CachingHostAllocator(Backend& backend, OptionsSource source);
  ~CachingHostAllocator();  // stops the background thread and returns every block it holds
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
  // blocks, free lists, pending events and statistics agree (else what disagrees). The
  // statistics are recounted under PyTorch's rules (host_memory.h).
  std::size_t pending_blocks() const;
  std::size_t cached_blocks() const;
  std::string check_invariants() const;

 private:
  // How a block's memory was obtained, so it is returned the same way.
  enum class Origin { kHostAlloc, kRegistered, kReserve };
  struct Block {
    void* ptr = nullptr;
    std::size_t size = 0;
    bool allocated = false;
    int event_count = 0;
    Origin origin = Origin::kHostAlloc;
    std::vector<std::pair<int, StreamHandle>> streams;  // used on, since it was handed out
  };
  struct Reserve {
    char* base = nullptr;
    std::size_t size = 0;
    std::size_t used = 0;
    Origin origin = Origin::kHostAlloc;
  };
  struct PendingEvent {
    int device;
    EventHandle event;
    Block* block;
  };
  static constexpr std::size_t kBins = 64;

  HostAllocatorOptions options() const { return source_ != nullptr ? source_() : fixed_; }
  // Pinned memory for a new block of `size` bytes: from the reserve segment when it has room,
  // else from the backend (timed); `origin` says which.
  void* obtain_memory(std::size_t size, Origin& origin);
  void* allocate_pinned(std::size_t size, const HostAllocatorOptions& options, Origin& origin);
  void* register_host_memory(std::size_t size, std::size_t threads);
  void return_memory(void* ptr, Origin origin);
  void ensure_reserve();
  void start_background_thread();
  void background_loop();
  // Returns the blocks whose events have all completed to their free lists, oldest event
  // first, stopping at the first event not yet complete (PyTorch's process_events).
  void process_events_locked();
  EventHandle take_event_locked(int device);
  void notify(int action, const Block& block) const;
  Block* block_containing_locked(const void* ptr) const;

  Backend& backend_;
  const HostAllocatorOptions fixed_;
  const OptionsSource source_ = nullptr;
  std::once_flag reserve_once_;
  Reserve reserve_;  // written once (reserve_once_), then `used` under mutex_
  std::once_flag background_once_;
  std::thread background_;
  std::condition_variable wake_;  // a pending event was added, or stop_
  bool stop_ = false;
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::unique_ptr<Block>> blocks_;  // by address
  std::array<std::vector<Block*>, kBins> free_lists_;
  std::deque<PendingEvent> pending_;
  std::map<int, std::vector<EventHandle>> event_pool_;  // per device

  // PyTorch's HostStatsStaged: the active figures per size bucket (log2 of the block size).
  std::array<MemoryStat, kBins> active_bucket_{}, active_bytes_bucket_{};
  MemoryStat allocations_, allocated_bytes_;
  DurationStat host_alloc_time_, host_free_time_;
  // Tallies since construction, never reset, from which check_invariants recounts the active
  // figures: blocks freed with no stream use (counted active for good, as in PyTorch), and
  // blocks returned by their events.
  std::int64_t plain_frees_ = 0, plain_freed_bytes_ = 0, event_releases_ = 0, released_bytes_ = 0;
};

CachingHostAllocator& process_host_allocator();
// The pinned_* settings of an allocator configuration.
HostAllocatorOptions host_allocator_options(const AllocatorConfig& config);
// host_memory_stats()'s keys and values for `stats`.
std::map<std::string, std::int64_t> host_stats_map(const HostStats& stats);

}  // namespace cudascope::cuda::detail
