// Context capture (raw frames, interned, now) and symbolisation (at snapshot time).
#include "history.h"
#include "util/elf_symbols.h"

#include <cudascope/cuda/nvtx.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <new>
#include <type_traits>
#include <unordered_set>

// GCC's noipa (no inlining, cloning or other interprocedural change); clang has no such
// attribute, and noinline is its nearest.
#if defined(__clang__)
#define CUDASCOPE_NOIPA __attribute__((noinline))
#else
#define CUDASCOPE_NOIPA __attribute__((noipa))
#endif

namespace cudascope::cuda::detail::alloc {

namespace {

// The allocator's own frames above the caller's (capture_stack, capture_context,
// malloc/free, the public entry point) are not kept.
constexpr int kSkippedFrames = 4;
constexpr int kMaxFrames = kMaxCallerFrames + kSkippedFrames;
static_assert(kMaxFrames % 2 == 0, "the walk takes two frames a turn");
// Distinct C++ stacks kept for the process; beyond, contexts lose that part. A program with
// this many distinct call paths into the allocator is not one we expect.
constexpr std::size_t kMaxStacks = std::size_t{1} << 20;
// NVTX stacks, by contrast, can be new at every range: a step number or a sequence number
// in the names (f"step {i}", emit_nvtx's "seq = N") makes each one distinct. Bounded in
// count and in the bytes of their names (history.h says what it costs).
constexpr std::size_t kMaxNvtxStackBytes = std::size_t{4} << 20;

// What a thread keeps for capturing, in one thread_local (one TLS lookup per capture): its
// stack bounds, the NVTX stack it interned last, and its recent stacks, two-way
// set-associative by hash (the more recently used first), so a call site seen before costs a
// probe and a compare against the table's copy, without a lock. Trivially destructible:
// captures run during thread_local destruction.
struct RecentStack {
  std::uint64_t hash;
  const std::vector<void*>* frames;
  std::uint32_t id;
};
enum class StackBounds : std::uint8_t { kUnknown, kKnown, kUnavailable };
struct ThreadCapture {
  StackBounds bounds;  // looked up once, a failure too (on the main thread a lookup reads /proc)
  std::uintptr_t stack_base, stack_top;  // [base, top): the thread's own stack
  const std::vector<std::string>* last_ranges;  // the NVTX stack interned last, and its id
  std::uint32_t last_ranges_id;
  // The hash of the NVTX stack the full table refused last: captured again (an allocation
  // after another in one range), it is refused without taking the table's lock.
  std::uint64_t refused_ranges_hash;
  static constexpr unsigned kSetBits = 7;
  std::array<std::array<RecentStack, 2>, std::size_t{1} << kSetBits> stacks;
};
thread_local ThreadCapture thread_capture{};

void find_stack_bounds(ThreadCapture& t) noexcept {
  pthread_attr_t attr;
  void* base = nullptr;
  std::size_t size = 0;
  t.bounds = StackBounds::kUnavailable;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  const bool known = pthread_attr_getstack(&attr, &base, &size) == 0 && base != nullptr && size != 0;
  pthread_attr_destroy(&attr);
  if (!known) return;
  t.stack_base = reinterpret_cast<std::uintptr_t>(base);
  t.stack_top = t.stack_base + size;
  t.bounds = StackBounds::kKnown;
}

std::uint64_t mix(std::uint64_t h, const void* p) noexcept {
  return (h ^ reinterpret_cast<std::uintptr_t>(p)) * 0x100000001b3ULL;
}

// Walks frame pointers, hashing as it goes: about 14 instructions a frame (two loads, the
// store, the hash and three compares; two frames a turn, so the depth is compared every
// other frame), where _Unwind_Backtrace and backtrace() take microseconds for a 24-frame
// stack (allocator_compare times both), so only this fits on the allocation path. Each next
// frame pointer must lie above the last (so at or above the first), aligned, and leave a
// whole frame record below the stack top, so a frame compiled without frame pointers ends
// the walk (or is stepped over) instead of faulting, and the walk ends where the chain does
// (the outermost frame's saved pointer is null). Those checks hold only on the thread's own
// stack: on a signal's alternate stack or a fiber's, nothing bounds the walk, so it does not
// start. It reads other functions' frames, which AddressSanitizer would take for overflows.
__attribute__((always_inline, no_sanitize("address"))) inline FrameWalk walk_chain(std::uintptr_t fp,
                                                                                    std::uintptr_t low,
                                                                                    std::uintptr_t high, void** out,
                                                                                    int max_depth) noexcept {
  const std::uintptr_t last = high - 2 * sizeof(void*);  // the highest a frame record may start at
  if (fp < low || fp > last || max_depth < 2) return {};
  auto chained = [last](std::uintptr_t from, std::uintptr_t next) {
    return next > from && next <= last && next % sizeof(void*) == 0;
  };
  void** p = out;
  void** const end = out + (max_depth & ~1);
  std::uint64_t hash = 0;
  for (;;) {
    const auto* frame = reinterpret_cast<const std::uintptr_t*>(fp);
    p[0] = reinterpret_cast<void*>(frame[1]);
    hash = mix(hash, p[0]);
    std::uintptr_t next = frame[0];
    if (!chained(fp, next)) {
      p += 1;
      break;
    }
    fp = next;
    frame = reinterpret_cast<const std::uintptr_t*>(fp);
    p[1] = reinterpret_cast<void*>(frame[1]);
    hash = mix(hash, p[1]);
    p += 2;
    next = frame[0];
    if (p == end || !chained(fp, next)) break;
    fp = next;
  }
  return {static_cast<int>(p - out), hash};
}

// From the walk's own frame: its return address is the capture's.
__attribute__((noinline, no_sanitize("address"))) FrameWalk walk_frames(void** out, int max_depth,
                                                                         std::uintptr_t low, std::uintptr_t high) {
  return walk_chain(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)), low, high, out, max_depth);
}

std::size_t bytes_of(const std::vector<void*>& frames) noexcept { return frames.size() * sizeof(void*); }
std::size_t bytes_of(const std::vector<std::string>& ranges) noexcept {
  std::size_t bytes = ranges.size() * sizeof(std::string);
  for (const auto& range : ranges) bytes += range.size();
  return bytes;
}

// Every distinct value of T, stored once, up to `max_values` of them and `max_bytes` in all;
// ids are positions + 1. Stored values never move or change (a deque that only grows), so a
// reference handed out stays valid unlocked.
template <typename T>
class InternTable {
 public:
  InternTable(std::size_t max_values, std::size_t max_bytes) : max_values_(max_values), max_bytes_(max_bytes) {}
  // The id and stored copy of `value` (made on first sight); {0, nullptr} where it is new
  // and the table is full, or host memory ran out. Never throws: a capture may not fail.
  template <typename Range>
  std::pair<std::uint32_t, const T*> intern(const Range& value, std::uint64_t hash) noexcept {
    try {
      std::lock_guard lock(mutex_);
      auto [first, last] = by_hash_.equal_range(hash);
      for (auto it = first; it != last; ++it) {
        const T& stored = values_[it->second - 1];
        if (std::equal(stored.begin(), stored.end(), value.begin(), value.end())) return {it->second, &stored};
      }
      return add(value, hash);
    } catch (...) {
      return {0, nullptr};
    }
  }
  const T& at(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    return values_[id - 1];
  }
  // Set once a value has been refused for want of room; read without the lock.
  bool full() const noexcept { return full_.load(std::memory_order_relaxed); }
  std::uint64_t refused() const noexcept { return refused_.load(std::memory_order_relaxed); }

 private:
  template <typename Range>
  std::pair<std::uint32_t, const T*> add(const Range& value, std::uint64_t hash) {
    T copy(value.begin(), value.end());
    const std::size_t bytes = bytes_of(copy);
    if (values_.size() >= max_values_ || bytes > max_bytes_ - bytes_) {
      full_.store(true, std::memory_order_relaxed);
      refused_.fetch_add(1, std::memory_order_relaxed);
      return {0, nullptr};
    }
    values_.push_back(std::move(copy));
    const auto id = static_cast<std::uint32_t>(values_.size());
    try {
      by_hash_.emplace(hash, id);
    } catch (...) {
      values_.pop_back();  // never handed out
      throw;
    }
    bytes_ += bytes;
    return {id, &values_.back()};
  }

  std::mutex mutex_;
  std::deque<T> values_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash_;
  const std::size_t max_values_, max_bytes_;
  std::size_t bytes_ = 0;
  std::atomic<bool> full_{false};
  std::atomic<std::uint64_t> refused_{0};
};

// Never destroyed: frees (and so captures) run from static destructors at exit.
InternTable<std::vector<void*>>& stacks() {
  static auto* table = new InternTable<std::vector<void*>>(kMaxStacks, std::numeric_limits<std::size_t>::max());
  return *table;
}
InternTable<std::vector<std::string>>& nvtx_stacks() {
  static auto* table = new InternTable<std::vector<std::string>>(kMaxNvtxStacks, kMaxNvtxStackBytes);
  return *table;
}

// `hash` covers the allocator's own frames too (the walk hashes as it goes): the same kept
// stack reached through malloc and through free may be stored twice, which costs a copy.
std::uint32_t stack_id(ThreadCapture& t, std::span<void* const> frames, std::uint64_t hash) {
  // The multiply leaves the hash's high bits the best mixed.
  auto& set = t.stacks[hash >> (64 - ThreadCapture::kSetBits)];
  for (std::size_t way = 0; way < set.size(); ++way) {
    RecentStack& slot = set[way];
    if (slot.frames != nullptr && slot.hash == hash &&
        std::equal(frames.begin(), frames.end(), slot.frames->begin(), slot.frames->end())) {
      if (way != 0) std::swap(set[0], set[way]);
      return set[0].id;
    }
  }
  const auto [id, stored] = stacks().intern(frames, hash);
  if (id != 0) {
    set[1] = set[0];
    set[0] = {hash, stored, id};
  }
  return id;
}

// A thread with NVTX ranges open: its stack changes far less often than it allocates, so
// the one interned last is compared first.
// Not inlined nor cloned, here and below: a clone specialised to the thread_local would look it
// up again after every call it makes.
CUDASCOPE_NOIPA std::uint32_t nvtx_id_of_open_ranges(ThreadCapture& t,
                                                                const std::vector<std::string>& ranges) {
  if (t.last_ranges != nullptr && *t.last_ranges == ranges) return t.last_ranges_id;
  std::uint64_t hash = ranges.size();
  for (const auto& range : ranges) hash = (hash ^ std::hash<std::string>{}(range)) * 0x100000001b3ULL;
  // A hash's match stands for the stack's: two stacks of one hash lose their ranges once full.
  if (hash == t.refused_ranges_hash && nvtx_stacks().full()) return 0;
  const auto [id, stored] = nvtx_stacks().intern(ranges, hash);
  if (id == 0) {
    t.refused_ranges_hash = hash;
    return 0;
  }
  t.last_ranges = stored;
  t.last_ranges_id = id;
  return id;
}

// Asked for on every capture, not cached: once the thread's stack is destroyed (a free
// from a later thread_local destructor, or from static destructors at exit) range_stack()
// hands back an empty one, and the context has no NVTX part.
std::uint32_t nvtx_id(ThreadCapture& t) {
  const std::vector<std::string>& ranges = nvtx::range_stack();
  return ranges.empty() ? 0 : nvtx_id_of_open_ranges(t, ranges);
}

}  // namespace

namespace {
// Out of line, so the NVTX-only capture does not set up the frame buffer.
CUDASCOPE_NOIPA std::uint32_t capture_stack(ThreadCapture& t) {
  if (t.bounds == StackBounds::kUnknown) [[unlikely]] find_stack_bounds(t);
  if (t.bounds != StackBounds::kKnown) return 0;
  void* buffer[kMaxFrames];
  const FrameWalk walk = walk_frames(buffer, kMaxFrames, t.stack_base, t.stack_top);
  // Too short to hold the allocator's own frames: keep them all.
  const int skip = walk.depth > kSkippedFrames ? kSkippedFrames : 0;
  return walk.depth > 0 ? stack_id(t, std::span<void* const>(buffer + skip, buffer + walk.depth), walk.hash) : 0;
}
}  // namespace

ContextPtr capture_context(bool cpp_stacks) noexcept {
  ThreadCapture& t = thread_capture;
  ContextPtr context;
  context.nvtx = nvtx_id(t);
  if (cpp_stacks) context.stack = capture_stack(t);
  return context;
}

FrameWalk walk_frame_chain(std::uintptr_t fp, std::uintptr_t low, std::uintptr_t high, void** out,
                           int max_depth) noexcept {
  return walk_chain(fp, low, high, out, max_depth);
}

ContextPtr capture_nvtx_context(const std::vector<std::string>& ranges) noexcept {
  return {0, nvtx_id_of_open_ranges(thread_capture, ranges)};
}

std::span<void* const> stack_frames(std::uint32_t id) {
  if (id == 0) return {};
  return stacks().at(id);
}

std::uint64_t nvtx_stacks_refused() noexcept { return nvtx_stacks().refused(); }

const std::vector<std::string>& nvtx_ranges(std::uint32_t id) {
  static const std::vector<std::string> none;
  return id == 0 ? none : nvtx_stacks().at(id);
}

namespace {
// CLOCK_MONOTONIC and the TSC read as close together as possible.
void clock_pair(std::uint64_t& tick, std::uint64_t& ns) noexcept {
#if defined(__x86_64__)
  const std::uint64_t before = __builtin_ia32_rdtsc();
  ns = instrumentation::host_time_ns();
  tick = before + (__builtin_ia32_rdtsc() - before) / 2;
#else
  ns = instrumentation::host_time_ns();
  tick = ns;
#endif
}

// The kernel's own judgement of the TSC: it keeps time by it only when it is invariant and
// synchronised across cores.
bool kernel_clock_is_tsc() {
  std::FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool tsc = std::fgets(name, sizeof name, f) != nullptr && std::strncmp(name, "tsc", 3) == 0;
  std::fclose(f);
  return tsc;
}
}  // namespace

void TraceClock::start() {
#if defined(__x86_64__)
  static const bool tsc = kernel_clock_is_tsc();
  tsc_ = tsc;
#endif
  if (tsc_) clock_pair(tick0_, ns0_);
}

TraceClock::ToNs TraceClock::to_ns() const {
  if (!tsc_) return {true, 0, 0, 0.0};
  std::uint64_t tick = 0, ns = 0;
  clock_pair(tick, ns);
  const double rate = tick > tick0_ ? static_cast<double>(ns - ns0_) / static_cast<double>(tick - tick0_) : 0.0;
  return {false, tick0_, ns0_, rate};
}

std::uint64_t TraceClock::ToNs::operator()(std::uint64_t tick) const noexcept {
  if (identity) return tick;
  const double delta = static_cast<double>(static_cast<std::int64_t>(tick - tick0)) * ns_per_tick;
  return static_cast<std::uint64_t>(static_cast<double>(ns0) + delta);
}

void TraceBuffer::set_max_entries(std::size_t n) noexcept {
  n = std::max<std::size_t>(n, 1);
  if (n == max_entries_) return;
  TraceRecord* const data = data_.get();
  std::size_t kept = written();
  if (wrapped_) {
    std::rotate(data, cursor_, data + length_);  // oldest first
    kept = length_;
  }
  if (kept > n) {
    std::move(data + (kept - n), data + kept, data);
    kept = n;
  }
  max_entries_ = length_ = n;
  wrapped_ = false;
  cursor_ = data + kept;
  limit_ = data + std::min(capacity_, length_);
}

void TraceBuffer::release() noexcept {
  data_.reset();
  cursor_ = limit_ = nullptr;
  wrapped_ = false;
  capacity_ = dropped_ = 0;
  length_ = max_entries_;
}

TraceRecord& TraceBuffer::slot_at_limit() noexcept {
  if (wrapped_ || written() == length_) {
    wrapped_ = true;
    cursor_ = data_.get();
    limit_ = cursor_ + length_;
    return *cursor_++;
  }
  return grown_slot();
}

static_assert(std::is_trivially_copyable_v<TraceRecord> && std::is_trivially_destructible_v<TraceRecord>);

void TraceBuffer::Unmap::operator()(TraceRecord* p) const noexcept { munmap(p, bytes); }

namespace {

// Where a ring asks to be mapped: 1 TiB above the heap's end. Without a hint mmap puts it just
// below the lowest mapping, which is where the CUDA driver grows its unified address space for
// device memory (a PROT_NONE reservation it extends downward as cudaMalloc needs more): a ring
// of tens of MiB there pushed every later segment of a replay with history on some hundred MiB
// lower, so its best-fit choices parted from the same replay without history, and from
// PyTorch's (whose history lives on the heap). The kernel takes the hint when the range is
// free and otherwise maps where it would have.
void* away_from_device_address_space() noexcept {
  constexpr std::uintptr_t kGap = std::uintptr_t{1} << 40;
  constexpr std::uintptr_t kAlign = std::uintptr_t{1} << 30;
  const auto heap_end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  return reinterpret_cast<void*>((heap_end + kGap + kAlign - 1) & ~(kAlign - 1));
}

}  // namespace

// Reserved without being written: pages are touched only as records fill them. Growth is in
// place while the range above the ring is free, as it is away from other mappings.
TraceRecord& TraceBuffer::grown_slot() noexcept {
  const std::size_t capacity = std::min(length_, std::max(kReserved, 2 * capacity_));
  const std::size_t bytes = capacity * sizeof(TraceRecord);
  const std::size_t kept = written();
  void* grown = data_ ? mremap(data_.get(), data_.get_deleter().bytes, bytes, MREMAP_MAYMOVE)
                      : mmap(away_from_device_address_space(), bytes, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (grown == MAP_FAILED) {  // the old mapping, if any, is untouched
    if (capacity_ == 0) {
      ++dropped_;
      return dropped_slot_;
    }
    length_ = capacity_;  // full now: overwrites the oldest from here on
    return slot_at_limit();
  }
  (void)data_.release();  // mremap moved or kept it: the old address is no longer ours
  data_ = std::unique_ptr<TraceRecord[], Unmap>(static_cast<TraceRecord*>(grown), Unmap{bytes});
  capacity_ = capacity;
  cursor_ = data_.get() + kept;
  limit_ = data_.get() + capacity_;
  return *cursor_++;
}

const char* action_name(Action action) noexcept {
  switch (action) {
    case Action::kAlloc: return "alloc";
    case Action::kFreeRequested: return "free_requested";
    case Action::kFreeCompleted: return "free_completed";
    case Action::kSegmentAlloc: return "segment_alloc";
    case Action::kSegmentFree: return "segment_free";
    case Action::kSegmentMap: return "segment_map";
    case Action::kSegmentUnmap: return "segment_unmap";
    case Action::kSnapshot: return "snapshot";
    case Action::kOom: return "oom";
    case Action::kUserDefined: return "user_defined";
    case Action::kFree: return "free_requested";
  }
  return "unknown";
}

namespace {
// Symbol and file names, kept for the life of the process (Frame holds string_views).
std::string_view intern(const std::string& s) {
  static std::mutex mutex;
  static auto* table = new std::unordered_set<std::string>();
  std::lock_guard lock(mutex);
  return *table->insert(s).first;
}
}  // namespace

memory::Frame Symbolizer::frame(void* address) {
  auto found = cache_.find(address);
  if (found != cache_.end()) return found->second;
  memory::Frame f;
  std::string name = "??", file;
  Dl_info info{};
  // A return address points after the call; look up the byte before it.
  void* lookup = static_cast<char*>(address) - 1;
  if (dladdr(lookup, &info) != 0) {
    // The object's own symbol tables name static and unexported functions too.
    if (std::string function = util::function_name_at(lookup); !function.empty()) name = std::move(function);
    if (info.dli_fname != nullptr) {
      const std::string path = info.dli_fname;
      const auto slash = path.rfind('/');
      file = slash == std::string::npos ? path : path.substr(slash + 1);
    }
    // No debug-line lookup: the offset in the object stands in for the line.
    f.line = static_cast<int>(static_cast<char*>(lookup) - static_cast<char*>(info.dli_fbase));
  }
  f.name = intern(name);
  f.filename = intern(file);
  cache_.emplace(address, f);
  return f;
}

const std::vector<memory::Frame>& Symbolizer::frames(const ContextPtr& context) {
  if (context.stack == 0) return empty_;
  // Identical stacks (the same call site) are symbolised once.
  auto [it, inserted] = by_stack_.try_emplace(context.stack);
  if (inserted) {
    const std::span<void* const> addresses = stack_frames(context.stack);
    it->second.reserve(addresses.size());
    for (void* address : addresses) it->second.push_back(frame(address));
  }
  return it->second;
}

std::string join_nvtx(const ContextPtr& context) {
  std::string out;
  for (const auto& range : nvtx_ranges(context.nvtx)) {
    if (!out.empty()) out += ';';
    out += range;
  }
  return out;
}

}  // namespace cudascope::cuda::detail::alloc
