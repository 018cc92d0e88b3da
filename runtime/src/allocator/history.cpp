// Context capture (raw frames, interned, now) and symbolisation (at snapshot time).
#include "history.h"
#include "nvtx_ranges.h"
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

// The allocator's own frame records below the caller's are not kept: capture_stack's,
// capture_context's and malloc's or free's (their return addresses point into
// capture_context, malloc/free and the public entry point). A capture follows this many
// links up from its own record to the first it keeps.
constexpr int kSkippedFrames = 3;
constexpr std::uintptr_t kRecordBytes = 2 * sizeof(void*);  // a saved frame pointer, a return address
// Distinct C++ stacks kept for the process; beyond, contexts lose that part. A program with
// this many distinct call paths into the allocator is not one we expect.
constexpr std::size_t kMaxStacks = std::size_t{1} << 20;
// NVTX stacks, by contrast, can be new at every range: a step number or a sequence number
// in the names (f"step {i}", emit_nvtx's "seq = N") makes each one distinct. Bounded in
// count and in the bytes of their names (history.h says what it costs).
constexpr std::size_t kMaxNvtxStackBytes = std::size_t{4} << 20;

// What a thread keeps for capturing, in one thread_local (one TLS lookup per capture): its
// stack bounds, the NVTX stack it interned last, and the walks it made recently, each with
// the proof of its result (history.h), four-way set-associative by the record the walk
// started from and the return address there (the more recently used first). A call site
// seen before costs a probe and a check of the proof, without a lock; two call sites whose
// walks start alike (one helper's call at one depth) take a way each. Trivially
// destructible: captures run during thread_local destruction.
struct KnownWalk {
  std::uintptr_t first_record;  // 0: an empty way (a record is never at address 0)
  std::uintptr_t return_address;
  const ProvenFrame* proof;  // the process-wide table's copy, which never moves
  std::uint32_t depth;
  std::uint32_t stack_id;
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
  static constexpr unsigned kSetBits = 6;
  using WalkSet = std::array<KnownWalk, 4>;
  std::array<WalkSet, std::size_t{1} << kSetBits> walks;
  std::uint64_t walks_taken;  // captures the cache could not answer (frame_chain_walks())
};
static_assert(std::is_trivially_destructible_v<ThreadCapture>);
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

std::uint64_t mix(std::uint64_t h, std::uint64_t word) noexcept { return (h ^ word) * 0x100000001b3ULL; }

// Whether a walk may start at `fp`: an aligned address with a whole frame record below `high`,
// at or above `low` (the thread's own stack; elsewhere nothing bounds a walk).
inline bool starts_a_record(std::uintptr_t fp, std::uintptr_t low, std::uintptr_t high) noexcept {
  return fp >= low && fp <= high - kRecordBytes && fp % sizeof(void*) == 0;
}

// Whether a frame record's saved pointer leads on to another record: above the last (so at
// or above the walk's first), aligned, with the whole record at or below `last_record` (the
// highest a record may start at below the stack top).
inline bool chained(std::uintptr_t from, std::uintptr_t next, std::uintptr_t last_record) noexcept {
  return next > from && next <= last_record && next % sizeof(void*) == 0;
}

// Walks frame pointers, handing each record read to keep(index, next pointer, return
// address); returns how many. The checks on each next pointer make a frame compiled without
// frame pointers end the walk (or be stepped over) instead of faulting, and the walk end
// where the chain does (the outermost frame's saved pointer is null). They hold only on the
// thread's own stack: on a signal's alternate stack or a fiber's, nothing bounds the walk, so
// it does not start. About 14 instructions a frame, each load waiting on the one before, where
// _Unwind_Backtrace and backtrace() take microseconds for a 24-frame stack (allocator_compare
// times both); a capture walks only when its cache has no proof that holds (below). It reads
// other functions' frames, which AddressSanitizer would take for overflows.
template <typename Keep>
__attribute__((always_inline, no_sanitize("address"))) inline int walk_chain(std::uintptr_t fp, std::uintptr_t low,
                                                                              std::uintptr_t high, int max_depth,
                                                                              Keep keep) noexcept {
  const std::uintptr_t last = high - kRecordBytes;
  if (!starts_a_record(fp, low, high) || max_depth < 1) return 0;
  for (int depth = 0;;) {
    const auto* record = reinterpret_cast<const std::uintptr_t*>(fp);
    const std::uintptr_t next = record[0];
    keep(depth, next, record[1]);
    if (++depth == max_depth || !chained(fp, next, last)) return depth;
    fp = next;
  }
}

// A frame record loaded as one 16-byte vector (may_alias: the stack's words were written as
// anything), and a proof's entry, which is aligned.
// (RecordWords is declared from the vector type: clang ignores an aligned() lowering the
// alignment in the vector's own declaration, and would load records with an aligned load.)
typedef std::uint64_t ProofWords __attribute__((vector_size(16), may_alias));
typedef ProofWords RecordWords __attribute__((aligned(8)));
static_assert(alignof(RecordWords) == alignof(std::uintptr_t), "a frame record is 8-aligned, not 16");
static_assert(alignof(ProvenFrame) == alignof(ProofWords) && sizeof(ProvenFrame) == sizeof(ProofWords));

// One frame record's two words, as one vector. Not a lambda: under AddressSanitizer a lambda
// is not inlined into its no_sanitize caller, and its load would be checked.
__attribute__((always_inline, no_sanitize("address"))) inline RecordWords record_at(std::uintptr_t address) noexcept {
  return *reinterpret_cast<const RecordWords*>(address);
}

// frame_chain_proven (history.h) for a proof of `depth` records (1 to max_depth), made by
// walk_chain. Every load's address comes from the proof, not from the stack, so none waits
// on another, and a record costs two vector operations: the walk's checks need not be made
// again, since the records the proof chains are the ones the walk chained, at the same
// distances.
__attribute__((always_inline, no_sanitize("address"))) inline bool proof_holds(std::uintptr_t fp, std::uintptr_t high,
                                                                                const ProvenFrame* proof, int depth,
                                                                                int max_depth) noexcept {
  const std::uintptr_t last = high - kRecordBytes;
  // A walk's records lie ever higher, at multiples of 8 from its first, so the last is the
  // farthest from fp. Where it is below the top, so is every other record the proof chains to.
  const std::uint64_t reach = depth > 1 ? proof[depth - 2].next_offset : 0;
  if (fp > last || reach > last - fp || fp % sizeof(void*) != 0) return false;
  const auto* expected = reinterpret_cast<const ProofWords*>(proof);
  const RecordWords first = {fp, 0};  // saved pointers are compared as offsets from fp
  RecordWords differ = {0, 0};
  std::uint64_t offset = 0;
#pragma GCC unroll 2
  for (int i = 0; i + 1 < depth; ++i) {
    differ |= (record_at(fp + offset) - first) ^ expected[i];
    offset = proof[i].next_offset;
  }
  // The walk stopped at the last record for want of depth, or because the next pointer there
  // led nowhere: whatever that pointer holds now must lead nowhere still.
  const auto* record = reinterpret_cast<const std::uintptr_t*>(fp + offset);
  const bool ends_there = depth == max_depth || !chained(fp + offset, record[0], last);
  return ends_there && record[1] == proof[depth - 1].return_address && (differ[0] | differ[1]) == 0;
}

// A table value's bytes: its elements', and for strings their characters too.
template <typename T>
std::size_t bytes_of(const std::vector<T>& values) noexcept {
  static_assert(std::is_trivially_copyable_v<T>, "strings count their characters (below)");
  return values.size() * sizeof(T);
}
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

// The proofs of the walks that found kept stacks, relative to the walk's first record, so
// that threads and stack depths share them: about one per stack, more where a stack's frames
// can lie at other distances (a frame that grows with alloca). Bounded in bytes as well: a
// proof the full table refuses is not cached, and its call site walks every time. Never
// destroyed, as stacks().
constexpr std::size_t kMaxWalkProofBytes = std::size_t{64} << 20;
InternTable<std::vector<ProvenFrame>>& walk_proofs() {
  static auto* table = new InternTable<std::vector<ProvenFrame>>(kMaxStacks, kMaxWalkProofBytes);
  return *table;
}

ThreadCapture::WalkSet& walk_set(ThreadCapture& t, std::uintptr_t first_record, std::uintptr_t return_address) {
  // The multiply leaves the high bits the best mixed.
  return t.walks[((first_record >> 4) ^ return_address) * 0x9e3779b97f4a7c15ULL >> (64 - ThreadCapture::kSetBits)];
}

// The walk from `fp`, written as its proof (history.h); its depth.
__attribute__((always_inline, no_sanitize("address"))) inline int prove_walk(std::uintptr_t fp, std::uintptr_t low,
                                                                              std::uintptr_t high, ProvenFrame* out,
                                                                              int max_depth) noexcept {
  const int depth = walk_chain(fp, low, high, max_depth, [&](int i, std::uintptr_t next, std::uintptr_t return_address) {
    out[i] = {next - fp, return_address};
  });
  if (depth > 0) out[depth - 1].next_offset = 0;  // where the chain ended, or the depth ran out
  return depth;
}

// A walk the thread's cache has no proof for that holds: walked, its stack interned and its
// proof kept (the table's copy) in place of the set's least recently used.
CUDASCOPE_NOIPA __attribute__((no_sanitize("address"))) std::uint32_t walk_and_remember(ThreadCapture& t,
                                                                                        std::uintptr_t first_record,
                                                                                        std::uintptr_t low,
                                                                                        std::uintptr_t high) noexcept {
  ProvenFrame proof[kMaxCallerFrames];
  const int depth = prove_walk(first_record, low, high, proof, kMaxCallerFrames);
  if (depth == 0) return 0;
  ++t.walks_taken;
  void* frames[kMaxCallerFrames];
  std::uint64_t frames_hash = 0, proof_hash = 0;
  for (int i = 0; i < depth; ++i) {
    frames[i] = reinterpret_cast<void*>(proof[i].return_address);
    frames_hash = mix(frames_hash, proof[i].return_address);
    proof_hash = mix(mix(proof_hash, proof[i].return_address), proof[i].next_offset);
  }
  const std::uint32_t id = stacks().intern(std::span<void* const>(frames, depth), frames_hash).first;
  // Once the proofs' table is full, a miss walks every time, without asking it (and its lock).
  if (id == 0 || walk_proofs().full()) return id;
  const std::vector<ProvenFrame>* stored_proof =
      walk_proofs().intern(std::span<const ProvenFrame>(proof, depth), proof_hash).second;
  if (stored_proof != nullptr) {
    ThreadCapture::WalkSet& set = walk_set(t, first_record, proof[0].return_address);
    std::move_backward(set.begin(), set.end() - 1, set.end());
    set[0] = {first_record, proof[0].return_address, stored_proof->data(), static_cast<std::uint32_t>(depth), id};
  }
  return id;
}

// The id of the stack the walk from `first_record` (in [low, high)) finds: the cached
// walk's, where its proof holds, else a fresh walk's.
__attribute__((always_inline, no_sanitize("address"))) inline std::uint32_t known_stack_id(
    ThreadCapture& t, std::uintptr_t first_record, std::uintptr_t low, std::uintptr_t high) noexcept {
  const std::uintptr_t return_address = reinterpret_cast<const std::uintptr_t*>(first_record)[1];
  ThreadCapture::WalkSet& set = walk_set(t, first_record, return_address);
  for (std::size_t way = 0; way < set.size(); ++way) {
    const KnownWalk& known = set[way];
    if (known.first_record == first_record && known.return_address == return_address &&
        proof_holds(first_record, high, known.proof, static_cast<int>(known.depth), kMaxCallerFrames)) {
      if (way != 0) std::rotate(set.begin(), set.begin() + way, set.begin() + way + 1);
      return set[0].stack_id;
    }
  }
  return walk_and_remember(t, first_record, low, high);
}

// Where the caller's frames start: kSkippedFrames links up from `own`, or `own` itself where
// the chain ends before (then the stack is the allocator's own frames, all kept).
__attribute__((always_inline, no_sanitize("address"))) inline std::uintptr_t first_kept_record(
    std::uintptr_t own, std::uintptr_t high) noexcept {
  std::uintptr_t record = own;
#pragma GCC unroll 4
  for (int i = 0; i < kSkippedFrames; ++i) {
    const std::uintptr_t next = *reinterpret_cast<const std::uintptr_t*>(record);
    if (!chained(record, next, high - kRecordBytes)) return own;
    record = next;
  }
  return record;
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
  // Until some thread pushes a range none has one open: no call, no TLS access for the stack.
  if (!nvtx::detail::ranges_ever_pushed()) return 0;
  const std::vector<std::string>& ranges = nvtx::range_stack();
  return ranges.empty() ? 0 : nvtx_id_of_open_ranges(t, ranges);
}

}  // namespace

namespace {
// Out of line, so the NVTX-only capture does not touch the walk cache; the allocator's
// frames start at this function's own record.
CUDASCOPE_NOIPA __attribute__((no_sanitize("address"))) std::uint32_t capture_stack(ThreadCapture& t) {
  if (t.bounds == StackBounds::kUnknown) [[unlikely]] find_stack_bounds(t);
  if (t.bounds != StackBounds::kKnown) return 0;
  const auto own = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  // Off the thread's own stack (a signal's alternate stack, a fiber's) nothing bounds a walk.
  if (!starts_a_record(own, t.stack_base, t.stack_top)) return 0;
  std::uint32_t id = known_stack_id(t, first_kept_record(own, t.stack_top), t.stack_base, t.stack_top);
  // Not a tail call: the walk on a miss may start at this frame's record, which a tail call pops.
  asm volatile("" : "+r"(id));
  return id;
}
}  // namespace

ContextPtr capture_context(bool cpp_stacks) noexcept {
  ThreadCapture& t = thread_capture;
  ContextPtr context;
  context.nvtx = nvtx_id(t);
  if (cpp_stacks) context.stack = capture_stack(t);
  return context;
}

__attribute__((no_sanitize("address"))) int walk_frame_chain(std::uintptr_t fp, std::uintptr_t low,
                                                             std::uintptr_t high, void** out, int max_depth) noexcept {
  return walk_chain(fp, low, high, max_depth, [&](int i, std::uintptr_t, std::uintptr_t return_address) {
    out[i] = reinterpret_cast<void*>(return_address);
  });
}

__attribute__((no_sanitize("address"))) int prove_frame_chain(std::uintptr_t fp, std::uintptr_t low,
                                                              std::uintptr_t high, ProvenFrame* out,
                                                              int max_depth) noexcept {
  return prove_walk(fp, low, high, out, max_depth);
}

namespace {
// Only the shape of a walk's proof bounds every read by its last record's: offsets rising, at
// multiples of 8, the last 0. A proof handed in is checked for it first.
bool is_a_walks_proof(std::span<const ProvenFrame> proof) noexcept {
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i + 1 < proof.size(); ++i) {
    if (proof[i].next_offset <= previous || proof[i].next_offset % sizeof(void*) != 0) return false;
    previous = proof[i].next_offset;
  }
  return !proof.empty() && proof.back().next_offset == 0;
}
}  // namespace

__attribute__((no_sanitize("address"))) bool frame_chain_proven(std::uintptr_t fp, std::uintptr_t high,
                                                                std::span<const ProvenFrame> proof,
                                                                int max_depth) noexcept {
  if (!is_a_walks_proof(proof) || proof.size() > static_cast<std::size_t>(std::max(max_depth, 0))) return false;
  return proof_holds(fp, high, proof.data(), static_cast<int>(proof.size()), max_depth);
}

__attribute__((no_sanitize("address"))) std::uint32_t frame_chain_stack_id(std::uintptr_t fp, std::uintptr_t low,
                                                                           std::uintptr_t high) noexcept {
  return starts_a_record(fp, low, high) ? known_stack_id(thread_capture, fp, low, high) : 0;
}

std::uint64_t frame_chain_walks() noexcept { return thread_capture.walks_taken; }

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
