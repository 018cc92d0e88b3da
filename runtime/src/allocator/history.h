#pragma once
// Allocation history: what record_memory_history keeps. A context is captured on the
// allocation path as the calling thread's raw return addresses and its NVTX range stack,
// both interned in process-wide, bounded tables: a context is two ids, and a call site seen before
// costs a probe of a per-thread cache and a check that the frames it remembers are still on
// the stack (no lock, no allocation).
// Frames are symbolised only when a snapshot is taken. The TraceBuffer is the ring buffer
// of actions (PyTorch's TraceEntryRingBuffer): fixed-size records, allocated when
// recording starts. Thread-safety: capture_context and the tables are thread-safe (the
// tables only grow, so what they return stays valid); the device lock guards a TraceBuffer.

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/memory.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::detail::alloc {

// When to keep a context, as PyTorch's RecordContext.
enum class RecordContext : int { kNever = 0, kState = 1, kAlloc = 2, kAll = 3 };

// A captured context: ids in the process's stack and NVTX tables, 0 for none. A value, so
// records and blocks hold it without reference counts.
struct ContextId {
  std::uint32_t stack = 0;
  std::uint32_t nvtx = 0;
  explicit operator bool() const noexcept { return stack != 0 || nvtx != 0; }
};
using ContextPtr = ContextId;  // the name the allocator's callers (and the sanitizer) use

// Process-wide recording settings, read on every allocation (one relaxed load when off).
struct HistorySettings {
  bool record_trace = false;  // enabled == "all": keep the ring buffer
  RecordContext when = RecordContext::kNever;
  bool cpp_stacks = false;
  std::size_t max_entries = 1;
};

// Captures the calling thread's context (cheap: no symbolisation). Never throws: where a
// part cannot be kept (its table full, host memory out) the context goes without it.
ContextPtr capture_context(bool cpp_stacks) noexcept;
// The NVTX part alone, for a thread whose range stack (nvtx::range_stack(), not empty) the
// caller has read: the allocator tests for an empty stack inline and calls this only when
// ranges are open.
ContextPtr capture_nvtx_context(const std::vector<std::string>& ranges) noexcept;

// The frame-pointer walk a C++ stack capture makes, from the frame record at `fp` (saved
// frame pointer, then return address) up the chain while each next record lies above the
// last, aligned, with the whole record below `high`; nothing is read outside [fp, high), and
// nothing when `fp` is not an aligned address in [low, high). Writes at most `max_depth`
// return addresses, innermost first, and returns how many. Tests feed it fabricated chains.
int walk_frame_chain(std::uintptr_t fp, std::uintptr_t low, std::uintptr_t high, void** out, int max_depth) noexcept;
// A kept C++ stack has at most this many of the caller's frames (the allocator's own are
// not kept), innermost first.
inline constexpr int kMaxCallerFrames = 60;

// What a walk read, which is all its result depends on: per frame record, innermost first,
// the offset of the next record from the walk's first and the return address. The last
// record's offset is 0: there the chain ended (its next pointer failed the walk's test) or
// the depth ran out. A capture keeps the proof of each walk it makes; walking again from the
// same record, holding the same first return address, it checks the proof's words against
// the stack instead: independent loads at known offsets, where the walk is a chain of
// dependent ones. Offsets, so one stored proof serves every thread and stack depth; each
// thread's cache learns it once per record it starts from.
struct alignas(16) ProvenFrame {  // aligned: checked as one 16-byte vector
  std::uint64_t next_offset;
  std::uint64_t return_address;
  friend bool operator==(const ProvenFrame&, const ProvenFrame&) = default;
};
// walk_frame_chain's walk from `fp`, written to `out` as its proof; returns its depth.
int prove_frame_chain(std::uintptr_t fp, std::uintptr_t low, std::uintptr_t high, ProvenFrame* out,
                      int max_depth) noexcept;
// Whether walk_frame_chain(fp, low, high, ..., max_depth), for `fp` in [low, high), would
// read every word of `proof` (one prove_frame_chain made, from any address) and end where it
// did: then it would return the proof's addresses. Reads only [fp, high), and nothing at
// all where the proof's records would reach past `high` or `proof` is not a walk's (offsets
// rising at multiples of 8, the last 0).
bool frame_chain_proven(std::uintptr_t fp, std::uintptr_t high, std::span<const ProvenFrame> proof,
                        int max_depth) noexcept;
// The id of the stack walk_frame_chain(fp, low, high, ..., kMaxCallerFrames) returns, as a
// capture finds it: through the calling thread's cache of proven walks, walking and
// interning on a miss. 0 where `fp` is not an aligned address in [low, high) or the stack
// table is full. Tests feed it fabricated chains.
std::uint32_t frame_chain_stack_id(std::uintptr_t fp, std::uintptr_t low, std::uintptr_t high) noexcept;
// How many of the calling thread's captures its cache could not answer, and so walked.
std::uint64_t frame_chain_walks() noexcept;

// Distinct NVTX range stacks kept for the process (and at most 4 MiB of their names). What
// they cost: each is a copy of its range names, kept for the life of the process; a
// capture under the stack its thread captured last costs a compare, and under any other a
// hash of its names, a process-wide lock and a lookup (a copy, the first time). A program
// whose range names are all distinct (a step or sequence number in each: f"step {i}",
// emit_nvtx's "seq = N") fills the table early on; from then on, contexts under a stack not
// kept have no NVTX part, and each thread refuses a stack it met last without the lock.
inline constexpr std::size_t kMaxNvtxStacks = 4096;
// How often a new NVTX stack was refused because the table was full (a thread that meets
// one refused stack again and again counts it once).
std::uint64_t nvtx_stacks_refused() noexcept;
// An interned stack's return addresses, innermost first (empty for 0).
std::span<void* const> stack_frames(std::uint32_t id);
// An interned NVTX range stack, outermost first (empty for 0).
const std::vector<std::string>& nvtx_ranges(std::uint32_t id);

enum class Action : std::uint8_t {
  kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kSegmentMap, kSegmentUnmap, kSnapshot, kOom,
  kUserDefined,
  kFree  // free_requested and free_completed at once (one record, two trace entries)
};
const char* action_name(Action action) noexcept;

// 40 bytes, written with five 8-byte stores: the action shares a word with the context's
// NVTX id, which is below kMaxNvtxStacks + 1 and so fits in 24 bits.
struct TraceRecord {
  TraceRecord() = default;
  TraceRecord(Action action, std::uintptr_t addr, std::size_t size, std::int64_t stream, std::uint64_t ticks,
              ContextPtr context) noexcept
      : addr(addr),
        size(size),
        stream(stream),
        ticks(ticks),
        stack(context.stack),
        nvtx_and_action(context.nvtx | static_cast<std::uint32_t>(action) << kActionShift) {}
  Action action() const noexcept { return static_cast<Action>(nvtx_and_action >> kActionShift); }
  ContextPtr context() const noexcept { return {stack, nvtx_and_action & ((1u << kActionShift) - 1)}; }

  std::uintptr_t addr;  // device_free for kOom
  std::size_t size;
  std::int64_t stream;
  std::uint64_t ticks;  // TraceClock::now()
  std::uint32_t stack;
  std::uint32_t nvtx_and_action;

 private:
  static constexpr unsigned kActionShift = 24;
  static_assert(kMaxNvtxStacks < (std::size_t{1} << kActionShift));
};
static_assert(sizeof(TraceRecord) == 40);

// The history's timestamps. Where the kernel keeps time by the TSC, a record takes the raw
// TSC (an inline rdtsc): host_time_ns() scales it through a call and an atomic load, which
// on a virtual machine doubles the cost of the three stamps of an alloc/free pair. Ticks
// are mapped onto host_time_ns()'s line (CLOCK_MONOTONIC) when a snapshot is taken, through
// the anchor taken at start() and one taken then. Elsewhere a tick is a host_time_ns().
class TraceClock {
 public:
  void start();
  std::uint64_t now() const noexcept {
#if defined(__x86_64__)
    if (tsc_) [[likely]] return __builtin_ia32_rdtsc();
#endif
    return instrumentation::host_time_ns();
  }
  // Ticks to host_time_ns(), for the records taken since start().
  struct ToNs {
    bool identity;  // ticks are host_time_ns() already
    std::uint64_t tick0, ns0;
    double ns_per_tick;
    std::uint64_t operator()(std::uint64_t tick) const noexcept;
  };
  ToNs to_ns() const;

 private:
  bool tsc_ = false;
  std::uint64_t tick0_ = 0;
  std::uint64_t ns0_ = 0;
};

// Oldest entries are overwritten once `max_entries` are kept. The storage is reserved at
// the first insert (up to kReserved entries at once; an unbounded buffer doubles past it)
// without touching its pages, so a device that records nothing costs no memory; after
// that an insert fills one fixed-size slot in place and allocates nothing: a cursor bumped
// up to a limit, past which (the ring's end, or the storage's) an out-of-line step wraps or
// grows.
// Nothing here throws: records are written after the allocator has changed its state.
// Where the storage cannot grow (out of host memory), the ring stays at the length it has
// and overwrites its oldest record; with no storage yet, the record is dropped and counted.
class TraceBuffer {
 public:
  static constexpr std::size_t kReserved = std::size_t{1} << 20;
  static constexpr std::size_t kPrefetchAhead = 8;  // records: 320 bytes, five lines
  // Keeps the newest records that fit.
  void set_max_entries(std::size_t n) noexcept;
  void insert(const TraceRecord& record) noexcept { slot() = record; }
  // The slot the next record goes to.
  TraceRecord& slot() noexcept {
    if (cursor_ != limit_) [[likely]] {
      // A ring of 100,000 records is larger than the caches: the line a few records ahead is
      // asked for now, so the store that fills it later does not wait for it. (Past the
      // storage's end a prefetch reads nothing and cannot fault.)
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(cursor_) +
                                                       kPrefetchAhead * sizeof(TraceRecord)),
                         1, 3);
      return *cursor_++;
    }
    return slot_at_limit();
  }
  // Drops the records and their storage (recording stopped).
  void release() noexcept;
  // Oldest first.
  template <typename F>
  void for_each(F f) const {
    if (wrapped_) {
      for (const TraceRecord* r = cursor_; r != data_.get() + length_; ++r) f(*r);
    }
    for (const TraceRecord* r = data_.get(); r != cursor_; ++r) f(*r);
  }
  std::size_t size() const noexcept { return wrapped_ ? length_ : written(); }
  std::size_t max_entries() const noexcept { return max_entries_; }
  // Records dropped for want of storage since recording started.
  std::size_t dropped() const noexcept { return dropped_; }

 private:
  // The cursor reached its limit: back to the start once the ring is full, else grow.
  TraceRecord& slot_at_limit() noexcept;
  TraceRecord& grown_slot() noexcept;
  std::size_t written() const noexcept { return static_cast<std::size_t>(cursor_ - data_.get()); }
  // Storage is a mapping of its own (records are trivially copyable; a new-expression would
  // zero every record's context, touching all the pages at once). Never heap memory freed
  // by other code: a ring of tens of MiB goes back to the system when recording stops, it
  // grows by mremap without a copy, and out of address space it fails the same way wherever
  // the process's heap happens to stand.
  struct Unmap {
    std::size_t bytes;  // no initializer: a nested class's would make it not default-constructible here
    void operator()(TraceRecord* p) const noexcept;
  };
  std::unique_ptr<TraceRecord[], Unmap> data_;
  TraceRecord* cursor_ = nullptr;  // the next slot; once wrapped, also the oldest record
  TraceRecord* limit_ = nullptr;   // data_ + min(capacity_, length_)
  bool wrapped_ = false;           // the ring has been filled: [cursor_, data_ + length_) is older
  std::size_t capacity_ = 0;
  std::size_t max_entries_ = 1;
  std::size_t length_ = 1;  // the ring's: max_entries_, or the capacity it could not grow past
  std::size_t dropped_ = 0;
  TraceRecord dropped_slot_{};  // where a dropped record is written
};

// Turns raw frames into (name, file, line) once per address and once per distinct stack
// for a whole snapshot; names are interned for the life of the process.
class Symbolizer {
 public:
  const std::vector<memory::Frame>& frames(const ContextPtr& context);

 private:
  memory::Frame frame(void* address);
  std::unordered_map<void*, memory::Frame> cache_;
  std::unordered_map<std::uint32_t, std::vector<memory::Frame>> by_stack_;
  std::vector<memory::Frame> empty_;
};

// The NVTX stack as user_metadata.
std::string join_nvtx(const ContextPtr& context);

}  // namespace cudascope::cuda::detail::alloc
