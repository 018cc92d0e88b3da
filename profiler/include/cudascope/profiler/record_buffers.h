#pragma once
// Per-thread record buffers: the hot path of every source.
//
// Each producing thread appends Records to its own chain of fixed-size chunks (no lock, no
// allocation except when a chunk fills, one release store per record); one consumer (the
// session's writer thread) drains the chains concurrently, recycling drained chunks.
// Memory is bounded: when every allowed chunk is in use the record is dropped and counted,
// never lost silently.
//
// Page faults, not stores, are what a producer pays for on fresh memory (a 4 KiB fault per
// 40 records). So a producer never touches a page first: chunks are carved from 2 MiB slabs
// (transparent huge pages where the system allows) that are touched when made; a drained
// chunk goes back to the thread that filled it (its spare, taken without a lock) or to the
// shared pool; and while a refiller runs (start_refiller), a producer that takes the pool
// below half its reserve wakes it to make more slabs ahead of demand, up to the limit.
//
// Thread-safety: emit() from any thread; drain()/discard() from one consumer thread at a
// time; reserve/start_refiller/stop_refiller from one controlling thread. The process-wide
// instance is never destroyed, so threads may emit until exit.

#include <cudascope/profiler/record.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cudascope::profiler {

class RecordBuffers {
 public:
  static constexpr std::size_t kChunkRecords = 1024;
  static constexpr std::size_t kChunkBytes = kChunkRecords * sizeof(Record);

  RecordBuffers();
  ~RecordBuffers();
  RecordBuffers(const RecordBuffers&) = delete;
  RecordBuffers& operator=(const RecordBuffers&) = delete;

  static RecordBuffers& process() noexcept {
    RecordBuffers* instance = process_instance_.load(std::memory_order_acquire);
    return instance != nullptr ? *instance : make_process();
  }

  // Appends `count` contiguous records (a record and its kText continuations stay in one
  // chunk). False when the memory limit is reached: the records are dropped and counted.
  bool emit(const Record* records, std::size_t count) noexcept;
  bool emit(const Record& record) noexcept { return emit(&record, 1); }

  // In-place emission, for hot paths that would otherwise build records on the stack only
  // to copy them: claim() returns `count` contiguous slots in the calling thread's chunk,
  // the caller writes every byte of them, then publish() makes them visible to the
  // consumer. Between the two the thread emits nothing else. A claim with records ==
  // nullptr means the memory limit was reached (already counted as dropped); publish nothing.
  struct Chunk;
  struct Claim {
    Record* records = nullptr;
    Chunk* chunk = nullptr;
    std::uint32_t end = 0;  // the chunk's committed count once published
  };
  Claim claim(std::size_t count) noexcept;
  static void publish(const Claim& claim) noexcept;

  // Consumer side. Calls consume(records, count) for each run of pending records, in each
  // thread's order; records without a thread_id get the producing thread's. Returns the
  // number of records consumed.
  using Consumer = std::function<void(const Record* records, std::size_t count)>;
  std::size_t drain(const Consumer& consume);
  // Drops everything pending (records emitted before a session started).
  void discard() { drain([](const Record*, std::size_t) {}); }

  // Allocates (and touches) chunks up to `bytes` into the free pool and keeps that many
  // there, so producers take ready pages instead of faulting fresh ones on the hot path.
  void reserve(std::size_t bytes);
  // A thread that tops the pool up to its reserve whenever producers take it below half
  // (and at least every `period`), so bursts beyond the reserve still find touched chunks.
  // stop_refiller joins it. Idempotent.
  void start_refiller(std::chrono::milliseconds period = std::chrono::milliseconds(200));
  void stop_refiller();
  // In a child forked while the refiller ran: the thread is the parent's; stop waiting for
  // it (producers then make their own slabs). Async-signal-safe.
  void forget_refiller_after_fork() noexcept;
  // Chunks in the free pool now (for tests and stats).
  std::size_t free_chunks() const;
  // The most memory the chunks may take; at least two chunks.
  void set_memory_limit(std::size_t bytes) noexcept;
  std::size_t memory_limit() const noexcept { return limit_chunks_.load() * kChunkBytes; }
  std::size_t bytes_held() const noexcept { return chunks_allocated_.load() * kChunkBytes; }
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

  // Implementation types (public only so the per-thread cache can name them).
  struct Chunk {
    std::atomic<std::uint32_t> committed{0};
    std::atomic<Chunk*> next{nullptr};
    Record records[kChunkRecords];
  };
  struct ThreadBuffer {
    // A drained chunk the consumer handed back to this thread: the producer takes it with
    // one exchange, and its pages are still warm in this thread's caches.
    std::atomic<Chunk*> spare{nullptr};
    Chunk* tail = nullptr;      // producer's chunk
    Chunk* head = nullptr;      // consumer's chunk
    std::uint32_t consumed = 0;  // consumer's position in head
    std::uint32_t thread_id = 0;
    std::atomic<bool> retired{false};
  };

 private:
  static RecordBuffers& make_process() noexcept;
  // claim() when the thread has no buffer yet or its chunk is full.
  Claim claim_slow(std::size_t count) noexcept;
  ThreadBuffer* register_thread() noexcept;
  Chunk* take_chunk() noexcept;
  void recycle(Chunk* chunk) noexcept;
  Chunk* grow(ThreadBuffer& buffer) noexcept;
  // Maps and touches one slab of up to `wanted` chunks (fewer near the limit) and puts all
  // but the first into the pool; returns the first, or nullptr at the limit.
  Chunk* make_slab(std::size_t wanted) noexcept;
  void push_free_locked(Chunk* chunk) noexcept;
  Chunk* pop_free_locked() noexcept;
  // Returns slabs whose chunks are all free while the pool holds more than its reserve.
  void trim();
  void refill();
  void refiller_loop(std::chrono::milliseconds period);

  std::mutex threads_mutex_;
  std::vector<ThreadBuffer*> threads_;
  mutable std::mutex pool_mutex_;
  std::vector<Chunk*> free_chunks_;
  std::vector<void*> slabs_;  // every mapped slab (under pool_mutex_)
  std::mutex refill_mutex_;
  std::condition_variable refill_wake_;
  bool refill_requested_ = false;  // under refill_mutex_
  bool refiller_stopping_ = false;  // under refill_mutex_
  std::atomic<bool> refiller_running_{false};
  std::unique_ptr<std::thread> refiller_;
  std::atomic<std::size_t> chunks_allocated_{0};
  std::atomic<std::size_t> limit_chunks_{(256u << 20) / kChunkBytes};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::size_t> keep_free_{64};  // chunks the pool keeps rather than frees
  const std::uint64_t id_;  // tells this instance's per-thread cache from another's
  static std::atomic<RecordBuffers*> process_instance_;
};

namespace detail {
// The calling thread's buffer and the id of the RecordBuffers it belongs to. Trivially
// destructible, so emitting stays valid during exit. initial-exec: the hot path reads them
// without a __tls_get_addr call (a few bytes of the static TLS surplus, which libraries
// loaded with dlopen may use).
// __thread rather than thread_local: a thread_local declared without its definition in
// sight is read through a wrapper that checks for a dynamic initialiser.
extern __thread RecordBuffers::ThreadBuffer* tls_record_buffer __attribute__((tls_model("initial-exec")));
extern __thread std::uint64_t tls_record_owner __attribute__((tls_model("initial-exec")));
}  // namespace detail

// Inline so the per-record path is two thread-local loads, a relaxed load of the chunk's
// count and a compare: no call, no atomic read-modify-write.
inline RecordBuffers::Claim RecordBuffers::claim(std::size_t count) noexcept {
  ThreadBuffer* buffer = detail::tls_record_buffer;
  if (buffer != nullptr && detail::tls_record_owner == id_) [[likely]] {
    Chunk* chunk = buffer->tail;
    const std::uint32_t n = chunk->committed.load(std::memory_order_relaxed);
    if (n + count <= kChunkRecords) [[likely]] {
      return {chunk->records + n, chunk, n + static_cast<std::uint32_t>(count)};
    }
  }
  return claim_slow(count);
}

// A plain store on x86: the consumer reads `committed` with acquire.
inline void RecordBuffers::publish(const Claim& claim) noexcept {
  claim.chunk->committed.store(claim.end, std::memory_order_release);
}

}  // namespace cudascope::profiler
