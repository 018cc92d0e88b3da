#pragma once
// One device's caching allocator: PyTorch's DeviceCachingAllocator (same algorithm, same
// statistics) with an inline lock, pooled nodes and an open-addressing pointer map on the
// hot path. Thread-safety: every public method takes the device lock; none calls another.

#include "block_pool.h"
#include "device_lock.h"
#include "expandable_segment.h"
#include "history.h"
#include "../nvtx_ranges.h"
#include "pointer_map.h"
#include "stats.h"

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/nvtx.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <string>
#include <vector>

namespace cudascope::cuda::detail::alloc {

// The configuration in force (set_allocator_settings replaces it; readers see a stable
// object: old ones are kept until exit).
const AllocatorConfig& config() noexcept;

// PyTorch's FreeMemoryCallback: when a request finds no cached block, before new memory is
// allocated, the callback runs (without the device lock) and, when it returns true (it freed
// memory), the cache is searched again. CUDA IPC registers ipc_collect at its first share, as
// torch registers CudaIPCCollect; with none registered a miss costs one atomic load.
using FreeMemoryCallback = bool (*)();
void set_free_memory_callback(FreeMemoryCallback callback) noexcept;

// Why a pointer could not be freed.
enum class PointerKind { kAllocated, kFreeBlock, kInsideBlock, kUnknown };

class DeviceAllocator {
 public:
  DeviceAllocator(int device, Backend& backend);
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // Returns a block of at least `size` bytes for `stream`; throws OutOfMemoryError.
  void* malloc(std::size_t size, StreamHandle stream, std::int64_t stream_id);
  // Frees `ptr` when it is allocated here (true); false, with nothing changed, otherwise.
  bool free(void* ptr);
  // What `ptr` is to this device (error messages).
  PointerKind classify(const void* ptr);
  bool record_stream(void* ptr, const StreamUse& use);
  // The segment holding the allocated block at `ptr`: its base and size (PyTorch's
  // getBaseAllocation, for CUDA IPC); {nullptr, 0} when `ptr` is not allocated here. Throws
  // cuda::Error for a block of an expandable segment (not one cudaMalloc).
  std::pair<void*, std::size_t> base_allocation(const void* ptr);
  bool owns_allocation(const void* ptr);

  // CUDA graphs' private pools (PyTorch's beginAllocateToPool, endAllocateToPool, releasePool).
  // While a capture allocates to `id`, requests on streams for which `filter` is true are
  // served from the pool (created, or its use_count raised). release_pool: a graph using the
  // pool is gone; at use_count 0 empty_cache may free its unused segments.
  using StreamFilter = std::function<bool(StreamHandle)>;
  void begin_allocate_to_pool(MempoolId id, StreamFilter filter);
  void end_allocate_to_pool(MempoolId id);
  void release_pool(MempoolId id);
  // The pool's use_count; 0 when the pool does not exist (never made, or freed).
  int pool_use_count(MempoolId id);

  void empty_cache();
  void set_memory_limit(std::size_t bytes);
  std::size_t memory_limit() const;
  bool has_memory_limit() const;

  DeviceStats stats();
  std::map<std::int64_t, StreamStats> stream_stats();
  void reset_accumulated();
  void reset_peak();
  // Returns to the state of a new allocator (replays): drops the memory limit.
  void clear_memory_limit();
  // Replays on sim: the addresses the recording GPU gave the next segments, in order, used
  // only to break best-fit ties as they broke there (empty: real addresses). Returns how
  // many of the previous list were used.
  std::size_t set_recorded_addresses(std::vector<std::uintptr_t> addresses);
  std::size_t live_allocations();
  std::size_t largest_free_block();

  void set_history(const HistorySettings& settings);
  // Appends this device's segments and trace (trace entries oldest first). Only copies are
  // taken under the device lock; frames are symbolised and ranges joined after it.
  void snapshot(std::vector<memory::SegmentInfo>& segments, std::vector<memory::TraceEntry>& trace,
                Symbolizer& symbolizer, std::int64_t epoch_offset_ns);
  // "" when the block structure and statistics agree; else what is wrong (property tests).
  std::string check_invariants();

 private:
  struct AllocParams {
    SizeKey key;
    BlockPool* pool;
    std::size_t alloc_size;
    Block* block = nullptr;
    // Where get_free_block found `block`: it is still in its pool's set, so that a split
    // can leave the remainder's node where it is (alloc_found_block takes it out otherwise).
    SizeSet::const_iterator found_at{};
    bool in_set = false;
    StreamStats* stream_stats = nullptr;
    std::int64_t stream_id = 0;
    bool oom = false;
  };

  // History off: one relaxed load and a branch. On without C++ stacks, a process that never
  // pushed an NVTX range pays one more relaxed load; else a thread with no range open pays a
  // call of range_stack() and a compare here; only open ranges reach the capture's tables.
  ContextPtr gather(RecordContext level) const {
    const unsigned capture = capture_.load(std::memory_order_relaxed);
    if ((capture & kCaptureWhen) < static_cast<unsigned>(level)) [[likely]] return {};
    if (capture & kCaptureStacks) return capture_context(true);
    if (!nvtx::detail::ranges_ever_pushed()) return {};
    const std::vector<std::string>& ranges = nvtx::range_stack();
    if (ranges.empty()) [[likely]] return {};
    return capture_nvtx_context(ranges);
  }
  StreamStats* stats_for(StreamHandle stream);
  std::size_t round_size(std::size_t size) const;
  BlockPool& pool_for(std::size_t size, StreamHandle stream) {
    if (!captures_underway_.empty()) [[unlikely]] {
      if (PrivatePool* pool = capturing_pool(stream)) return size <= kSmallSize ? pool->small : pool->large;
    }
    return size <= kSmallSize ? small_ : large_;
  }
  // The private pool a capture underway on `stream` allocates to (the latest first); nullptr.
  PrivatePool* capturing_pool(StreamHandle stream);
  // cudaMalloc as PyTorch's cudaMallocMaybeCapturing: during a capture the calling thread's
  // capture mode is relaxed around it, since cudaMalloc is not allowed in global mode.
  void* malloc_maybe_capturing(std::size_t size, bool capturing);
  void insert_events_deferred_until_no_capture(const ContextPtr& ctx);
  static std::size_t allocation_size(std::size_t size);
  bool should_split(const Block* block, std::size_t size) const;

  bool get_free_block(AllocParams& p);
  // Runs the free-memory callback with `lock` released; true when it freed memory.
  static bool free_memory(std::unique_lock<DeviceLock>& lock);
  // `lock` holds mutex_; release_lock_on_cudamalloc releases it around the backend's malloc.
  bool alloc_block(AllocParams& p, bool is_retry, const ContextPtr& ctx, std::unique_lock<DeviceLock>& lock);
  Block* alloc_found_block(AllocParams& p, std::size_t orig_size, ContextPtr ctx, bool split);
  // `completion_recorded`: free() wrote one kFree record for the request and its completion.
  void free_block(Block* block, const ContextPtr& ctx, bool completion_recorded = false);
  std::size_t try_merge_blocks(Block* dst, Block* src, BlockPool& pool);

  bool release_available_cached_blocks(const AllocParams& p, const ContextPtr& ctx);
  bool release_cached_blocks(const ContextPtr& ctx);
  void release_blocks(BlockPool& pool, const ContextPtr& ctx);
  void release_block(Block* block, const ContextPtr& ctx);
  void garbage_collect_cached_blocks(const ContextPtr& ctx);

  Block* find_expandable_block(StreamHandle stream, std::int64_t stream_id, BlockPool* pool, std::size_t size,
                               StreamStats* stream_stats);
  bool map_block(Block* to_map, std::size_t size, const ContextPtr& ctx);
  Block* try_allocate_expandable_block(AllocParams& p, const ContextPtr& ctx);
  void unmap_block(Block* block, const ContextPtr& ctx);
  void release_expandable_segment(Block* block);

  void insert_events(Block* block);
  void process_events(const ContextPtr& ctx);
  void synchronize_and_free_events(const ContextPtr& ctx);
  EventHandle get_event(int device);

  // Trace and observer hooks: inline tests of the flags, the work out of line, so that the
  // hot path pays a branch each when they are off.
  // On: a slot of the ring buffer filled in place, inline (a call costs as much again).
  // Never throws: it runs after the allocator's state has changed.
  void record(Action action, std::uintptr_t addr, std::size_t size, std::int64_t stream, ContextPtr ctx) noexcept {
    if (record_trace_) [[unlikely]] {
      trace_.slot() = TraceRecord{action, addr, size, stream, trace_clock_.now(), trace_contexts_ ? ctx : ContextPtr{}};
    }
  }
  // As above with the context of the block (`fallback`) when the call captured none.
  void record(Action action, std::uintptr_t addr, std::size_t size, std::int64_t stream, ContextPtr ctx,
              ContextPtr fallback) noexcept {
    record(action, addr, size, stream, ctx ? ctx : fallback);
  }
  // The observer's vocabulary (instrumentation.h), distinct from the history's Action.
  using Observed = instrumentation::AllocatorEvent::Action;
  // `pool`: the pool of an allocation or new segment, so a graph's private pool is named.
  void notify(Observed action, std::int64_t stream, std::uintptr_t addr, std::size_t size,
              const BlockPool* pool = nullptr) {
    if (auto* o = instrumentation::observer()) [[unlikely]] notify_observer(o, action, stream, addr, size, pool);
  }
  void notify_observer(instrumentation::Observer* o, Observed action, std::int64_t stream, std::uintptr_t addr,
                       std::size_t size, const BlockPool* pool);
  [[noreturn]] void raise_oom(AllocParams& p, ContextPtr ctx, std::unique_lock<DeviceLock>& lock);
  std::vector<const Block*> all_blocks() const;
  // The segments as they are now, frames not yet filled in; `contexts` gets each one's
  // context, then those of its blocks, in order. Under the lock.
  std::vector<memory::SegmentInfo> segments_now(std::vector<ContextPtr>& contexts) const;

  const int device_;
  Backend& backend_;
  mutable DeviceLock mutex_;
  std::pmr::unsynchronized_pool_resource nodes_;
  BlockArena arena_;
  BlockPool large_;
  BlockPool small_;
  PointerMap<Block> allocated_;
  DeviceStats stats_;
  std::vector<std::pair<StreamHandle, std::unique_ptr<StreamStats>>> stream_stats_;
  std::size_t last_stream_stats_ = 0;
  struct PendingEvents {
    StreamUse stream;
    std::deque<std::pair<EventHandle, Block*>> events;
  };
  std::vector<PendingEvents> cuda_events_;
  std::vector<std::pair<int, EventHandle>> event_pool_;
  std::size_t total_allocated_memory_ = 0;
  std::size_t cudamalloc_pending_ = 0;  // requested from cudaMalloc with the lock released
  std::size_t allowed_memory_maximum_ = 0;
  bool set_fraction_ = false;
  std::vector<ExpandableSegment*> expandable_segments_;
  // CUDA graphs: the private pools, those no graph uses any more, the captures allocating now
  // (a stream filter each), and blocks freed during capture with uses on other streams, whose
  // events wait until no capture is underway (recording them could join the capture).
  std::map<MempoolId, std::unique_ptr<PrivatePool>> graph_pools_;
  std::vector<PrivatePool*> graph_pools_freeable_;
  std::vector<std::pair<MempoolId, StreamFilter>> captures_underway_;
  std::vector<Block*> deferred_until_no_capture_;
  std::vector<std::uintptr_t> recorded_addresses_;
  std::size_t next_recorded_address_ = 0;

  // What gather() captures, read outside the lock: the RecordContext in the low bits, and
  // whether C++ stacks are walked.
  static constexpr unsigned kCaptureWhen = 3;
  static constexpr unsigned kCaptureStacks = 4;
  std::atomic<unsigned> capture_{0};
  bool record_trace_ = false;
  bool trace_contexts_ = false;  // context "alloc" or "all": trace records keep theirs
  TraceClock trace_clock_;
  TraceBuffer trace_;
};

}  // namespace cudascope::cuda::detail::alloc
