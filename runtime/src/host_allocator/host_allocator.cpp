// The caching host allocator (PyTorch's CachingHostAllocator algorithm): sizes rounded up to a
// power of two, exact-size reuse from a free list per power, and blocks freed while device
// work may still read them held back until events recorded at free time complete. New memory
// comes from cudaHostAlloc, or malloc + cudaHostRegister, or a reserve segment carved in
// 4 KiB steps, as PyTorch's pinned_* settings choose.
#include "host_allocator.h"

#include "../allocator/device_allocator.h"
#include "../check.h"
#include "../runtime_state.h"

#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/instrumentation.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <system_error>

namespace cudascope::cuda::detail {
namespace {

std::size_t round_up_power_of_two(std::size_t size) {
  std::size_t rounded = 1;
  while (rounded < size) rounded <<= 1;
  return rounded;
}

std::size_t bin_of(std::size_t rounded) { return static_cast<std::size_t>(63 - __builtin_clzll(rounded)); }

// c10's Stat::increase / Stat::decrease.
void increase(MemoryStat& stat, std::int64_t amount) {
  stat.current += amount;
  stat.peak = std::max(stat.peak, stat.current);
  stat.allocated += amount;
}
void decrease(MemoryStat& stat, std::int64_t amount) {
  stat.current -= amount;
  stat.freed += amount;
}
void reset_stat_peak(MemoryStat& stat) { stat.peak = stat.current; }
void reset_stat_accumulated(MemoryStat& stat) { stat.allocated = stat.freed = 0; }

// What PyTorch 2.11's process_events subtracts from a released block's active bytes: it calls
// active_bytes_bucket_stats[i].decrease(size) with the event loop's `size` argument, which is
// -1 ("any size") on that path. Stat::decrease takes a size_t, so current -= (int64_t)SIZE_MAX
// adds 1 and freed drops by 1; host_memory.h documents it.
constexpr std::int64_t kTorchReleasedBytes = -1;

std::int64_t microseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
}

constexpr std::size_t kPage = 4096;
std::size_t round_up_to_page(std::size_t size) { return (size + kPage - 1) / kPage * kPage; }

// Writes the first byte of each page of [begin, end) of `base` (page-aligned), so the kernel
// maps them before cudaHostRegister pins them (PyTorch's mapPagesForRegister).
void touch_pages(char* base, std::size_t begin, std::size_t end) {
  for (std::size_t offset = round_up_to_page(begin); offset < end; offset += kPage) {
    static_cast<volatile char*>(base)[offset] = 0;
  }
}

}  // namespace

void DurationStat::add(std::int64_t us) noexcept {
  total += us;
  ++count;
  max = std::max(max, us);
  min = min == 0 ? us : std::min(min, us);
}

HostAllocatorOptions host_allocator_options(const AllocatorConfig& config) {
  HostAllocatorOptions options;
  options.use_host_register = config.pinned_use_cuda_host_register;
  options.num_register_threads = config.pinned_num_register_threads;
  options.use_background_threads = config.pinned_use_background_threads;
  options.reserve_segment_bytes = config.pinned_reserve_segment_size;
  return options;
}

CachingHostAllocator::CachingHostAllocator(Backend& backend, HostAllocatorOptions options)
    : backend_(backend), fixed_(options) {}

CachingHostAllocator::CachingHostAllocator(Backend& backend, OptionsSource source)
    : backend_(backend), source_(source) {}

CachingHostAllocator::~CachingHostAllocator() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (background_.joinable()) background_.join();
  for (const PendingEvent& pending : pending_) {
    try {
      backend_.event_synchronize(pending.device, pending.event);
      backend_.event_destroy(pending.device, pending.event);
    } catch (...) {
    }
  }
  for (auto& [device, events] : event_pool_) {
    for (EventHandle event : events) {
      try {
        backend_.event_destroy(device, event);
      } catch (...) {
      }
    }
  }
  for (auto& [address, block] : blocks_) {
    try {
      return_memory(block->ptr, block->origin);
    } catch (...) {
    }
  }
  if (reserve_.base != nullptr) {
    try {
      return_memory(reserve_.base, reserve_.origin);
    } catch (...) {
    }
  }
}

void* CachingHostAllocator::register_host_memory(std::size_t size, std::size_t threads) {
  char* base = static_cast<char*>(std::aligned_alloc(kPage, round_up_to_page(size)));
  CUDASCOPE_CHECK(base != nullptr, error_code::kMemoryAllocation, "malloc",
                  "could not allocate " + std::to_string(size) + " bytes of host memory to register");
  try {
    if (threads > 1 && size >= kPage * threads) {
      // Faulting the pages in is most of the cost for large blocks; the threads split it.
      std::vector<std::thread> workers;
      std::size_t started = 0;
      try {
        for (; started < threads; ++started) {
          const std::size_t end = started + 1 == threads ? size : size * (started + 1) / threads;
          workers.emplace_back(touch_pages, base, size * started / threads, end);
        }
      } catch (const std::system_error&) {
        touch_pages(base, size * started / threads, size);  // no more threads: this one does the rest
      }
      for (std::thread& worker : workers) worker.join();
    } else {
      touch_pages(base, 0, size);
    }
    backend_.host_register(base, size);
  } catch (...) {
    std::free(base);
    throw;
  }
  return base;
}

void* CachingHostAllocator::allocate_pinned(std::size_t size, const HostAllocatorOptions& options, Origin& origin) {
  const auto start = std::chrono::steady_clock::now();
  void* ptr = nullptr;
  if (options.use_host_register) {
    ptr = register_host_memory(size, options.num_register_threads);
    origin = Origin::kRegistered;
  } else {
    ptr = backend_.malloc_host_pinned(size);
    origin = Origin::kHostAlloc;
  }
  const std::int64_t took = microseconds_since(start);
  CUDASCOPE_CHECK(ptr != nullptr, error_code::kMemoryAllocation, "cudaHostAlloc",
                  "could not allocate " + std::to_string(size) + " bytes of pinned host memory");
  std::lock_guard lock(mutex_);
  host_alloc_time_.add(took);
  return ptr;
}

void CachingHostAllocator::return_memory(void* ptr, Origin origin) {
  switch (origin) {
    case Origin::kHostAlloc: backend_.free_host_pinned(ptr); break;
    case Origin::kRegistered:
      backend_.host_unregister(ptr);
      std::free(ptr);
      break;
    case Origin::kReserve: break;  // the segment is returned as a whole, at destruction
  }
}

// The reserve segment is made at the first allocation that needs new memory, with the size
// configured then; if that fails, the next allocation tries again.
void CachingHostAllocator::ensure_reserve() {
  std::call_once(reserve_once_, [this] {
    const HostAllocatorOptions opts = options();
    if (opts.reserve_segment_bytes == 0) return;
    Origin origin = Origin::kHostAlloc;
    void* base = allocate_pinned(opts.reserve_segment_bytes, opts, origin);
    reserve_ = Reserve{static_cast<char*>(base), opts.reserve_segment_bytes, 0, origin};
  });
}

void* CachingHostAllocator::obtain_memory(std::size_t size, Origin& origin) {
  ensure_reserve();
  if (reserve_.base != nullptr) {
    const std::size_t step = round_up_to_page(size);
    std::lock_guard lock(mutex_);
    if (reserve_.size - reserve_.used >= step) {
      void* ptr = reserve_.base + reserve_.used;
      reserve_.used += step;
      origin = Origin::kReserve;
      return ptr;
    }
  }
  return allocate_pinned(size, options(), origin);
}

void CachingHostAllocator::start_background_thread() {
  std::call_once(background_once_, [this] { background_ = std::thread(&CachingHostAllocator::background_loop, this); });
}

// PyTorch's thread polls every 100 us forever; this one sleeps while no event is pending.
void CachingHostAllocator::background_loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (pending_.empty()) {
      wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    } else {
      wake_.wait_for(lock, std::chrono::microseconds(100), [this] { return stop_; });
    }
    if (!stop_) process_events_locked();
  }
}

// Host allocator actions reach the observer as allocator events of device -1.
void CachingHostAllocator::notify(int action, const Block& block) const {
  instrumentation::Observer* o = instrumentation::observer();
  if (o == nullptr) return;
  using E = instrumentation::AllocatorEvent;
  std::int64_t active_bytes = 0;
  for (const MemoryStat& bucket : active_bytes_bucket_) active_bytes += bucket.current;
  o->on_allocator_event(E{static_cast<E::Action>(action), -1, 0, reinterpret_cast<std::uintptr_t>(block.ptr),
                          block.size, instrumentation::host_time_ns(), active_bytes, allocated_bytes_.current});
}

void* CachingHostAllocator::allocate(std::size_t size) {
  if (size == 0) return nullptr;
  const std::size_t rounded = round_up_power_of_two(size);
  const std::size_t bin = bin_of(rounded);
  using Action = instrumentation::AllocatorEvent::Action;
  const bool background = options().use_background_threads;
  {
    std::lock_guard lock(mutex_);
    // With a background thread, only the thread looks at pending events (PyTorch 2.11 no
    // longer checks this size's pending blocks on the allocation path).
    if (!background) process_events_locked();
    std::vector<Block*>& list = free_lists_[bin];
    if (!list.empty()) {
      Block* block = list.back();
      list.pop_back();
      block->allocated = true;
      increase(active_bucket_[bin], 1);
      increase(active_bytes_bucket_[bin], static_cast<std::int64_t>(block->size));
      notify(static_cast<int>(Action::kAlloc), *block);
      return block->ptr;
    }
  }
  if (background) start_background_thread();
  // Slow path, outside the lock: cudaHostAlloc takes the driver's global lock and may take
  // milliseconds for large sizes.
  Origin origin = Origin::kHostAlloc;
  void* ptr = obtain_memory(rounded, origin);
  auto block = std::make_unique<Block>();
  block->ptr = ptr;
  block->size = rounded;
  block->allocated = true;
  block->origin = origin;
  std::lock_guard lock(mutex_);
  // A block carved from the reserve segment counts as one obtained from CUDA (PyTorch counts
  // blocks, not calls: num_host_alloc is allocations.allocated).
  increase(allocations_, 1);
  increase(allocated_bytes_, static_cast<std::int64_t>(rounded));
  increase(active_bucket_[bin], 1);
  increase(active_bytes_bucket_[bin], static_cast<std::int64_t>(rounded));
  notify(static_cast<int>(Action::kSegmentAlloc), *block);
  notify(static_cast<int>(Action::kAlloc), *block);
  blocks_.emplace(reinterpret_cast<std::uintptr_t>(ptr), std::move(block));
  return ptr;
}

CachingHostAllocator::Block* CachingHostAllocator::block_containing_locked(const void* ptr) const {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = blocks_.upper_bound(address);
  if (it == blocks_.begin()) return nullptr;
  --it;
  Block* block = it->second.get();
  return address < it->first + block->size ? block : nullptr;
}

void CachingHostAllocator::free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(ptr));
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  CUDASCOPE_CHECK(it != blocks_.end(), error_code::kInvalidValue, "cudascope::cuda::host::free",
                  std::string("pointer ") + text + " was not allocated by the caching host allocator");
  Block& block = *it->second;
  CUDASCOPE_CHECK(block.allocated, error_code::kInvalidValue, "cudascope::cuda::host::free",
                  std::string("pointer ") + text + " is already free (double free)");
  block.allocated = false;
  notify(static_cast<int>(instrumentation::AllocatorEvent::Action::kFree), block);
  if (block.streams.empty()) {
    // Straight back to its free list with no change to the statistics: PyTorch 2.11 lowers
    // the active figures only when a block's events complete (host_memory.h).
    free_lists_[bin_of(block.size)].push_back(&block);
    ++plain_frees_;
    plain_freed_bytes_ += static_cast<std::int64_t>(block.size);
    return;
  }
  // Device work may still read the block: one event per stream it was used on, and the block
  // returns to its free list when all have completed (process_events_locked).
  for (const auto& [device, stream] : block.streams) {
    EventHandle event = take_event_locked(device);
    backend_.event_record(device, event, stream);
    pending_.push_back({device, event, &block});
    ++block.event_count;
  }
  block.streams.clear();
  wake_.notify_one();
}

EventHandle CachingHostAllocator::take_event_locked(int device) {
  std::vector<EventHandle>& pool = event_pool_[device];
  if (!pool.empty()) {
    EventHandle event = pool.back();
    pool.pop_back();
    return event;
  }
  return backend_.event_create(device, EventFlags{});
}

// As PyTorch: oldest event first, and the first that is not complete ends the pass (events
// on other streams behind it wait for the next pass, even when complete).
void CachingHostAllocator::process_events_locked() {
  while (!pending_.empty()) {
    PendingEvent& oldest = pending_.front();
    if (!backend_.event_query(oldest.device, oldest.event)) return;
    event_pool_[oldest.device].push_back(oldest.event);
    Block* block = oldest.block;
    pending_.pop_front();
    if (--block->event_count != 0 || block->allocated) continue;
    // Reusable: back to its free list, leaving the active figures as PyTorch 2.11 does.
    const std::size_t bin = bin_of(block->size);
    free_lists_[bin].push_back(block);
    decrease(active_bucket_[bin], 1);
    decrease(active_bytes_bucket_[bin], kTorchReleasedBytes);
    ++event_releases_;
    released_bytes_ += static_cast<std::int64_t>(block->size);
  }
}

bool CachingHostAllocator::record_stream(void* ptr, int device, StreamHandle stream) {
  std::lock_guard lock(mutex_);
  Block* block = block_containing_locked(ptr);
  if (block == nullptr || !block->allocated) return false;
  const std::pair<int, StreamHandle> use{device, stream};
  if (std::find(block->streams.begin(), block->streams.end(), use) == block->streams.end()) {
    block->streams.push_back(use);
  }
  return true;
}

bool CachingHostAllocator::is_pinned(const void* ptr) const {
  std::lock_guard lock(mutex_);
  const Block* block = block_containing_locked(ptr);
  return block != nullptr && block->allocated;
}

void CachingHostAllocator::empty_cache() {
  std::vector<std::unique_ptr<Block>> doomed;
  {
    std::lock_guard lock(mutex_);
    process_events_locked();
    for (std::vector<Block*>& list : free_lists_) {
      for (Block* block : list) {
        auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(block->ptr));
        // Counted as returned now, so the statistics always equal a recount of blocks_. The
        // active figures do not change (PyTorch 2.11's empty_cache leaves them).
        decrease(allocations_, 1);
        decrease(allocated_bytes_, static_cast<std::int64_t>(block->size));
        notify(static_cast<int>(instrumentation::AllocatorEvent::Action::kSegmentFree), *block);
        doomed.push_back(std::move(it->second));
        blocks_.erase(it);
      }
      list.clear();
    }
  }
  // cudaFreeHost outside the lock: it synchronises with the device and may take a while.
  for (std::unique_ptr<Block>& block : doomed) {
    // A block carved from the reserve segment is dropped as PyTorch drops it: counted as
    // returned, its space never handed out again (the segment only grows up), no call timed.
    if (block->origin == Origin::kReserve) continue;
    const auto start = std::chrono::steady_clock::now();
    return_memory(block->ptr, block->origin);
    const std::int64_t took = microseconds_since(start);
    std::lock_guard lock(mutex_);
    host_free_time_.add(took);
  }
}

// PyTorch's getStats: the bucket figures summed, peaks too ("the best approximation we can
// get after the fact"), and the call counts derived from the allocations figure.
HostStats CachingHostAllocator::stats() const {
  std::lock_guard lock(mutex_);
  HostStats s;
  s.allocations = allocations_;
  s.allocated_bytes = allocated_bytes_;
  s.num_host_alloc = allocations_.allocated;
  s.num_host_free = allocations_.freed;
  const auto add = [](MemoryStat& sum, const MemoryStat& bucket) {
    sum.current += bucket.current;
    sum.peak += bucket.peak;
    sum.allocated += bucket.allocated;
    sum.freed += bucket.freed;
  };
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    add(s.active_requests, active_bucket_[bin]);
    add(s.active_bytes, active_bytes_bucket_[bin]);
  }
  s.host_alloc_time = host_alloc_time_;
  s.host_free_time = host_free_time_;
  return s;
}

void CachingHostAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  reset_stat_peak(allocations_);
  reset_stat_peak(allocated_bytes_);
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    reset_stat_peak(active_bucket_[bin]);
    reset_stat_peak(active_bytes_bucket_[bin]);
  }
  host_alloc_time_.min = host_alloc_time_.max = 0;
  host_free_time_.min = host_free_time_.max = 0;
}

void CachingHostAllocator::reset_accumulated() {
  std::lock_guard lock(mutex_);
  reset_stat_accumulated(allocations_);  // and so num_host_alloc and num_host_free
  reset_stat_accumulated(allocated_bytes_);
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    reset_stat_accumulated(active_bucket_[bin]);
    reset_stat_accumulated(active_bytes_bucket_[bin]);
  }
  host_alloc_time_.total = host_alloc_time_.count = 0;
  host_free_time_.total = host_free_time_.count = 0;
}

std::size_t CachingHostAllocator::pending_blocks() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const auto& [address, block] : blocks_) count += block->event_count > 0 ? 1 : 0;
  return count;
}

std::size_t CachingHostAllocator::cached_blocks() const {
  std::lock_guard lock(mutex_);
  std::size_t count = 0;
  for (const std::vector<Block*>& list : free_lists_) count += list.size();
  return count;
}

std::string CachingHostAllocator::check_invariants() const {
  std::lock_guard lock(mutex_);
  std::int64_t in_use = 0, in_use_bytes = 0, allocated_bytes = 0;
  std::map<const Block*, int> events;
  for (const PendingEvent& pending : pending_) ++events[pending.block];
  for (const auto& [address, block] : blocks_) {
    if (block->size == 0 || (block->size & (block->size - 1)) != 0) return "a block's size is not a power of two";
    allocated_bytes += static_cast<std::int64_t>(block->size);
    if (block->allocated || block->event_count > 0) {
      ++in_use;
      in_use_bytes += static_cast<std::int64_t>(block->size);
    }
    if (events[block.get()] != block->event_count) return "a block's event count differs from its pending events";
    if (!block->allocated && block->event_count == 0 && block->streams.empty()) {
      const std::vector<Block*>& list = free_lists_[bin_of(block->size)];
      if (std::count(list.begin(), list.end(), block.get()) != 1) return "a free block is not in its free list once";
    }
    if (!block->allocated && !block->streams.empty()) return "a free block still lists streams";
  }
  for (std::size_t bin = 0; bin < kBins; ++bin) {
    for (const Block* block : free_lists_[bin]) {
      if (block->allocated || block->event_count != 0) return "a listed block is in use or waiting";
      if (bin_of(block->size) != bin) return "a block is listed under the wrong size";
    }
  }
  if (allocations_.current != static_cast<std::int64_t>(blocks_.size())) return "allocations.current differs";
  if (allocated_bytes_.current != allocated_bytes) return "allocated_bytes.current differs from a recount";
  // PyTorch's active figures, recounted: every hand-out added the block; only a release by
  // events took it out again (a count of 1, and -1 bytes: see kTorchReleasedBytes). So the
  // blocks in use or waiting, plus every block ever freed with no stream use.
  const HostStats s = [this] {
    HostStats sum;
    for (std::size_t bin = 0; bin < kBins; ++bin) {
      sum.active_requests.current += active_bucket_[bin].current;
      sum.active_bytes.current += active_bytes_bucket_[bin].current;
    }
    return sum;
  }();
  if (s.active_requests.current != in_use + plain_frees_) return "active_requests.current differs from a recount";
  if (s.active_bytes.current != in_use_bytes + plain_freed_bytes_ + released_bytes_ + event_releases_) {
    return "active_bytes.current differs from a recount";
  }
  for (const MemoryStat* stat : {&allocations_, &allocated_bytes_}) {
    if (stat->peak < stat->current) return "a statistic's peak is below its current value";
  }
  for (const MemoryStat& bucket : active_bucket_) {
    if (bucket.peak < bucket.current || bucket.current < 0) return "an active bucket's peak or current is wrong";
  }
  return "";
}

CachingHostAllocator& process_host_allocator() {
  // Never destroyed: pinned memory may be freed from static destructors at exit.
  static CachingHostAllocator* const allocator = new CachingHostAllocator(
      lazy_backend(), +[] { return host_allocator_options(alloc::config()); });
  return *allocator;
}

namespace {
void put(std::map<std::string, std::int64_t>& out, const std::string& name, const MemoryStat& s) {
  out[name + ".current"] = s.current;
  out[name + ".peak"] = s.peak;
  out[name + ".allocated"] = s.allocated;
  out[name + ".freed"] = s.freed;
}
void put(std::map<std::string, std::int64_t>& out, const std::string& name, const DurationStat& s) {
  out[name + ".total"] = s.total;
  out[name + ".max"] = s.max;
  out[name + ".min"] = s.min;
  out[name + ".count"] = s.count;
  out[name + ".avg"] = s.count == 0 ? 0 : s.total / s.count;
}
}  // namespace

std::map<std::string, std::int64_t> host_stats_map(const HostStats& s) {
  std::map<std::string, std::int64_t> out;
  put(out, "active_requests", s.active_requests);
  put(out, "active_bytes", s.active_bytes);
  put(out, "allocations", s.allocations);
  put(out, "allocated_bytes", s.allocated_bytes);
  out["num_host_alloc"] = s.num_host_alloc;
  out["num_host_free"] = s.num_host_free;
  put(out, "host_alloc_time", s.host_alloc_time);
  put(out, "host_free_time", s.host_free_time);
  return out;
}

}  // namespace cudascope::cuda::detail

namespace cudascope::cuda {

std::map<std::string, std::int64_t> host_memory_stats() {
  return detail::host_stats_map(detail::process_host_allocator().stats());
}
void empty_host_cache() { detail::process_host_allocator().empty_cache(); }
void reset_peak_host_memory_stats() { detail::process_host_allocator().reset_peak(); }
void reset_accumulated_host_memory_stats() { detail::process_host_allocator().reset_accumulated(); }

namespace host {
void* allocate(std::size_t size) { return detail::process_host_allocator().allocate(size); }
void free(void* ptr) { detail::process_host_allocator().free(ptr); }
bool record_stream(void* ptr, const Stream& stream) {
  return detail::process_host_allocator().record_stream(ptr, stream.device_index(), stream.handle());
}
bool is_pinned(const void* ptr) { return detail::process_host_allocator().is_pinned(ptr); }
}  // namespace host

}  // namespace cudascope::cuda
