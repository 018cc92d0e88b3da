#include <cudascope/profiler/record_buffers.h>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <unordered_set>

namespace cudascope::profiler {
namespace detail {
__thread RecordBuffers::ThreadBuffer* tls_record_buffer __attribute__((tls_model("initial-exec"))) = nullptr;
__thread std::uint64_t tls_record_owner __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail
namespace {
using detail::tls_record_buffer;
using detail::tls_record_owner;
std::atomic<std::uint64_t> next_id{1};

// A slab: one 2 MiB-aligned mapping (one huge page where transparent huge pages are on),
// this header, then its chunks. A chunk finds its slab by masking its address.
constexpr std::size_t kSlabBytes = 2u << 20;
struct Slab {
  std::uint32_t chunks = 0;      // chunks carved from it
  std::uint32_t free = 0;        // of those, how many are in the pool (under pool_mutex_)
};
constexpr std::size_t kFirstChunk = 64;
constexpr std::size_t kSlabChunks = (kSlabBytes - kFirstChunk) / sizeof(RecordBuffers::Chunk);
static_assert(kSlabChunks >= 1);

Slab* slab_of(const void* chunk) noexcept {
  return reinterpret_cast<Slab*>(reinterpret_cast<std::uintptr_t>(chunk) & ~(std::uintptr_t{kSlabBytes} - 1));
}

// Maps kSlabBytes aligned to kSlabBytes (over-map, then unmap the ends), asks for huge pages
// and touches the first `used` bytes, so no producer takes the page faults.
void* map_slab(std::size_t used) noexcept {
  void* raw = mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kSlabBytes - 1) & ~(std::uintptr_t{kSlabBytes} - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + 2 * kSlabBytes;
  if (end > aligned + kSlabBytes) munmap(reinterpret_cast<void*>(aligned + kSlabBytes), end - aligned - kSlabBytes);
  auto* slab = reinterpret_cast<char*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(slab, kSlabBytes, MADV_HUGEPAGE);  // advice only: 4 KiB pages where refused
#endif
  for (std::size_t offset = 0; offset < used; offset += 4096) static_cast<volatile char*>(slab)[offset] = 0;
  return slab;
}
}  // namespace

// Marks the thread's buffer retired when the thread ends; the consumer frees it once drained.
struct ThreadRetirement {
  RecordBuffers::ThreadBuffer* buffer = nullptr;
  ~ThreadRetirement() {
    if (buffer != nullptr) buffer->retired.store(true, std::memory_order_release);
    tls_record_buffer = nullptr;
    tls_record_owner = 0;
  }
};
namespace {
thread_local ThreadRetirement tls_retirement;
}

std::atomic<RecordBuffers*> RecordBuffers::process_instance_{nullptr};

RecordBuffers& RecordBuffers::make_process() noexcept {
  static auto* instance = new RecordBuffers();  // never destroyed: threads emit until exit
  process_instance_.store(instance, std::memory_order_release);
  return *instance;
}

RecordBuffers::RecordBuffers() : id_(next_id.fetch_add(1)) {}

RecordBuffers::~RecordBuffers() {
  if (tls_record_owner == id_) {
    tls_retirement.buffer = nullptr;
    tls_record_buffer = nullptr;
    tls_record_owner = 0;
  }
  stop_refiller();
  for (ThreadBuffer* buffer : threads_) delete buffer;  // chunks live in the slabs
  for (void* slab : slabs_) munmap(slab, kSlabBytes);
}

void RecordBuffers::set_memory_limit(std::size_t bytes) noexcept {
  limit_chunks_.store(std::max<std::size_t>(2, bytes / kChunkBytes));
}

void RecordBuffers::reserve(std::size_t bytes) {
  const std::size_t wanted = std::min(bytes, memory_limit()) / kChunkBytes;
  keep_free_.store(std::max<std::size_t>(64, wanted));
  refill();
}

std::size_t RecordBuffers::free_chunks() const {
  std::lock_guard lock(pool_mutex_);
  return free_chunks_.size();
}

void RecordBuffers::push_free_locked(Chunk* chunk) noexcept {
  free_chunks_.push_back(chunk);
  ++slab_of(chunk)->free;
}

RecordBuffers::Chunk* RecordBuffers::pop_free_locked() noexcept {
  if (free_chunks_.empty()) return nullptr;
  Chunk* chunk = free_chunks_.back();
  free_chunks_.pop_back();
  --slab_of(chunk)->free;
  chunk->committed.store(0, std::memory_order_relaxed);
  chunk->next.store(nullptr, std::memory_order_relaxed);
  return chunk;
}

RecordBuffers::Chunk* RecordBuffers::make_slab(std::size_t wanted) noexcept {
  // Claim the chunks against the limit first, so concurrent growth never exceeds it.
  std::size_t allocated = chunks_allocated_.load();
  std::size_t count = 0;
  do {
    const std::size_t limit = limit_chunks_.load();
    if (allocated >= limit) return nullptr;
    count = std::min({wanted, kSlabChunks, limit - allocated});
  } while (!chunks_allocated_.compare_exchange_weak(allocated, allocated + count));
  void* memory = map_slab(kFirstChunk + count * sizeof(Chunk));
  if (memory == nullptr) {
    chunks_allocated_.fetch_sub(count);
    return nullptr;
  }
  auto* slab = new (memory) Slab();
  slab->chunks = static_cast<std::uint32_t>(count);
  auto* first = reinterpret_cast<Chunk*>(static_cast<char*>(memory) + kFirstChunk);
  for (std::size_t i = 0; i < count; ++i) new (first + i) Chunk;
  std::lock_guard lock(pool_mutex_);
  slabs_.push_back(memory);
  for (std::size_t i = 1; i < count; ++i) push_free_locked(first + i);
  return first;
}

void RecordBuffers::refill() {
  for (;;) {
    std::size_t missing = 0;
    {
      std::lock_guard lock(pool_mutex_);
      const std::size_t keep = keep_free_.load();
      if (free_chunks_.size() >= keep) return;
      missing = keep - free_chunks_.size();
    }
    Chunk* chunk = make_slab(missing);
    if (chunk == nullptr) return;  // at the limit
    std::lock_guard lock(pool_mutex_);
    push_free_locked(chunk);
  }
}

void RecordBuffers::start_refiller(std::chrono::milliseconds period) {
  if (refiller_running_.load()) return;
  {
    std::lock_guard lock(refill_mutex_);
    refiller_stopping_ = false;
    refill_requested_ = false;
  }
  refiller_ = std::make_unique<std::thread>([this, period] { refiller_loop(period); });
  refiller_running_.store(true);
}

void RecordBuffers::stop_refiller() {
  if (!refiller_running_.load()) return;
  {
    std::lock_guard lock(refill_mutex_);
    refiller_stopping_ = true;
  }
  refill_wake_.notify_all();
  if (refiller_ && refiller_->joinable()) refiller_->join();
  refiller_.reset();
  refiller_running_.store(false);
}

void RecordBuffers::forget_refiller_after_fork() noexcept {
  refiller_running_.store(false);
  static_cast<void>(refiller_.release());  // the parent's thread: neither joinable nor destroyable here
}

void RecordBuffers::refiller_loop(std::chrono::milliseconds period) {
  std::unique_lock lock(refill_mutex_);
  while (!refiller_stopping_) {
    refill_wake_.wait_for(lock, period, [this] { return refill_requested_ || refiller_stopping_; });
    if (refiller_stopping_) break;
    refill_requested_ = false;
    lock.unlock();
    refill();
    lock.lock();
  }
}

RecordBuffers::Chunk* RecordBuffers::take_chunk() noexcept {
  Chunk* chunk = nullptr;
  bool low = false;
  {
    std::lock_guard lock(pool_mutex_);
    chunk = pop_free_locked();
    low = free_chunks_.size() < keep_free_.load() / 2;
  }
  if (low && refiller_running_.load(std::memory_order_relaxed)) {
    // Once per chunk at most, so the lock and the wake are far off the per-record path.
    {
      std::lock_guard lock(refill_mutex_);
      refill_requested_ = true;
    }
    refill_wake_.notify_one();
  }
  // Only when the pool is empty does a producer make a slab (and touch it) itself.
  return chunk != nullptr ? chunk : make_slab(kSlabChunks);
}

void RecordBuffers::recycle(Chunk* chunk) noexcept {
  std::lock_guard lock(pool_mutex_);
  push_free_locked(chunk);
}

void RecordBuffers::trim() {
  std::lock_guard lock(pool_mutex_);
  const std::size_t keep = keep_free_.load();
  if (free_chunks_.size() <= keep + kSlabChunks) return;
  // Keep a burst's peak only up to the reserve: unmap slabs none of whose chunks is in use.
  std::unordered_set<Slab*> release;
  std::size_t releasable = 0;
  for (void* memory : slabs_) {
    auto* slab = static_cast<Slab*>(memory);
    if (slab->free != slab->chunks || free_chunks_.size() - releasable - slab->chunks < keep) continue;
    release.insert(slab);
    releasable += slab->chunks;
  }
  if (release.empty()) return;
  std::erase_if(free_chunks_, [&](Chunk* c) { return release.count(slab_of(c)) != 0; });
  std::erase_if(slabs_, [&](void* memory) {
    auto* slab = static_cast<Slab*>(memory);
    if (release.count(slab) == 0) return false;
    chunks_allocated_.fetch_sub(slab->chunks);
    munmap(memory, kSlabBytes);
    return true;
  });
}

RecordBuffers::ThreadBuffer* RecordBuffers::register_thread() noexcept {
  Chunk* first = take_chunk();
  if (first == nullptr) return nullptr;
  auto* buffer = new (std::nothrow) ThreadBuffer();
  if (buffer == nullptr) {
    recycle(first);
    return nullptr;
  }
  buffer->head = buffer->tail = first;
  buffer->thread_id = static_cast<std::uint32_t>(syscall(SYS_gettid));
  {
    std::lock_guard lock(threads_mutex_);
    threads_.push_back(buffer);
  }
  tls_record_buffer = buffer;
  tls_record_owner = id_;
  tls_retirement.buffer = buffer;
  return buffer;
}

RecordBuffers::Chunk* RecordBuffers::grow(ThreadBuffer& buffer) noexcept {
  Chunk* chunk = buffer.spare.exchange(nullptr, std::memory_order_acquire);
  if (chunk != nullptr) {
    chunk->committed.store(0, std::memory_order_relaxed);
    chunk->next.store(nullptr, std::memory_order_relaxed);
  } else {
    chunk = take_chunk();
  }
  if (chunk == nullptr) return nullptr;
  // The consumer reads `committed` of a chunk as final once it sees `next` set.
  buffer.tail->next.store(chunk, std::memory_order_release);
  buffer.tail = chunk;
  return chunk;
}

RecordBuffers::Claim RecordBuffers::claim_slow(std::size_t count) noexcept {
  ThreadBuffer* buffer = tls_record_owner == id_ ? tls_record_buffer : nullptr;
  if (buffer == nullptr && (buffer = register_thread()) == nullptr) {
    dropped_.fetch_add(count, std::memory_order_relaxed);
    return {};
  }
  Chunk* chunk = buffer->tail;
  std::uint32_t n = chunk->committed.load(std::memory_order_relaxed);
  if (n + count > kChunkRecords) {
    if (count > kChunkRecords || (chunk = grow(*buffer)) == nullptr) {
      dropped_.fetch_add(count, std::memory_order_relaxed);
      return {};
    }
    n = 0;
  }
  return {chunk->records + n, chunk, n + static_cast<std::uint32_t>(count)};
}

bool RecordBuffers::emit(const Record* records, std::size_t count) noexcept {
  const Claim slots = claim(count);
  if (slots.records == nullptr) return false;
  std::copy(records, records + count, slots.records);
  publish(slots);
  return true;
}

std::size_t RecordBuffers::drain(const Consumer& consume) {
  std::vector<ThreadBuffer*> threads;
  {
    std::lock_guard lock(threads_mutex_);
    threads = threads_;
  }
  std::size_t total = 0;
  std::vector<ThreadBuffer*> finished;
  for (ThreadBuffer* buffer : threads) {
    const bool retired = buffer->retired.load(std::memory_order_acquire);
    for (;;) {
      Chunk* chunk = buffer->head;
      Chunk* next = chunk->next.load(std::memory_order_acquire);
      const std::uint32_t committed = chunk->committed.load(std::memory_order_acquire);
      if (committed > buffer->consumed) {
        Record* first = chunk->records + buffer->consumed;
        const std::size_t count = committed - buffer->consumed;
        for (std::size_t i = 0; i < count; ++i) {
          if (first[i].thread_id == 0 && first[i].kind != RecordKind::kText) first[i].thread_id = buffer->thread_id;
        }
        consume(first, count);
        total += count;
        buffer->consumed = committed;
      }
      if (next == nullptr) break;
      buffer->head = next;
      buffer->consumed = 0;
      // Back to the thread that filled it when its spare slot is empty (only the producer
      // empties it, so a null seen here stays null until this store).
      if (!retired && buffer->spare.load(std::memory_order_relaxed) == nullptr) {
        buffer->spare.store(chunk, std::memory_order_release);
      } else {
        recycle(chunk);
      }
    }
    if (retired) finished.push_back(buffer);
  }
  if (!finished.empty()) {
    std::lock_guard lock(threads_mutex_);
    for (ThreadBuffer* buffer : finished) {
      threads_.erase(std::find(threads_.begin(), threads_.end(), buffer));
      recycle(buffer->head);
      if (Chunk* spare = buffer->spare.exchange(nullptr)) recycle(spare);
      delete buffer;
    }
  }
  trim();
  return total;
}

}  // namespace cudascope::profiler
