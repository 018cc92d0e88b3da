#include <cudascope/profiler/record_buffers.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace cudascope::profiler {
namespace {
// Trivially destructible, so emitting stays valid during exit after the holder below is gone.
// initial-exec: the hot path reads these without a __tls_get_addr call (a few bytes of the
// static TLS surplus, which libraries loaded with dlopen may use).
[[gnu::tls_model("initial-exec")]] thread_local RecordBuffers::ThreadBuffer* tls_buffer = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local std::uint64_t tls_owner = 0;  // id of the RecordBuffers tls_buffer belongs to
std::atomic<std::uint64_t> next_id{1};
}  // namespace

// Marks the thread's buffer retired when the thread ends; the consumer frees it once drained.
struct ThreadRetirement {
  RecordBuffers::ThreadBuffer* buffer = nullptr;
  ~ThreadRetirement() {
    if (buffer != nullptr) buffer->retired.store(true, std::memory_order_release);
    tls_buffer = nullptr;
    tls_owner = 0;
  }
};
namespace {
thread_local ThreadRetirement tls_retirement;
}

RecordBuffers& RecordBuffers::process() {
  static auto* instance = new RecordBuffers();  // never destroyed: threads emit until exit
  return *instance;
}

RecordBuffers::RecordBuffers() : id_(next_id.fetch_add(1)) {}

RecordBuffers::~RecordBuffers() {
  if (tls_owner == id_) {
    tls_retirement.buffer = nullptr;
    tls_buffer = nullptr;
    tls_owner = 0;
  }
  for (ThreadBuffer* buffer : threads_) {
    for (Chunk* c = buffer->head; c != nullptr;) {
      Chunk* next = c->next.load();
      delete c;
      c = next;
    }
    delete buffer;
  }
  for (Chunk* c : free_chunks_) delete c;
}

void RecordBuffers::set_memory_limit(std::size_t bytes) noexcept {
  limit_chunks_.store(std::max<std::size_t>(2, bytes / kChunkBytes));
}

void RecordBuffers::reserve(std::size_t bytes) {
  const std::size_t wanted = std::min(bytes, memory_limit()) / kChunkBytes;
  std::lock_guard lock(pool_mutex_);
  keep_free_ = std::max<std::size_t>(64, wanted);
  while (free_chunks_.size() < wanted && chunks_allocated_.load() < limit_chunks_.load()) {
    free_chunks_.push_back(new Chunk());  // value-initialised: every page touched now
    chunks_allocated_.fetch_add(1);
  }
}

RecordBuffers::Chunk* RecordBuffers::take_chunk() noexcept {
  {
    std::lock_guard lock(pool_mutex_);
    if (!free_chunks_.empty()) {
      Chunk* chunk = free_chunks_.back();
      free_chunks_.pop_back();
      chunk->committed.store(0, std::memory_order_relaxed);
      chunk->next.store(nullptr, std::memory_order_relaxed);
      return chunk;
    }
  }
  std::size_t allocated = chunks_allocated_.load();
  do {
    if (allocated >= limit_chunks_.load()) return nullptr;
  } while (!chunks_allocated_.compare_exchange_weak(allocated, allocated + 1));
  // Default-initialised: records are written before they are read, so no 96 KiB memset
  // on the producer's path (reserve() pre-touches the chunks it makes).
  Chunk* chunk = new (std::nothrow) Chunk;
  if (chunk == nullptr) chunks_allocated_.fetch_sub(1);
  return chunk;
}

void RecordBuffers::recycle(Chunk* chunk) noexcept {
  std::lock_guard lock(pool_mutex_);
  // Keep the reserve; return the rest so a burst does not pin its peak for good.
  if (free_chunks_.size() < keep_free_) {
    free_chunks_.push_back(chunk);
  } else {
    delete chunk;
    chunks_allocated_.fetch_sub(1);
  }
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
  tls_buffer = buffer;
  tls_owner = id_;
  tls_retirement.buffer = buffer;
  return buffer;
}

RecordBuffers::Chunk* RecordBuffers::grow(ThreadBuffer& buffer) noexcept {
  Chunk* chunk = take_chunk();
  if (chunk == nullptr) return nullptr;
  // The consumer reads `committed` of a chunk as final once it sees `next` set.
  buffer.tail->next.store(chunk, std::memory_order_release);
  buffer.tail = chunk;
  return chunk;
}

bool RecordBuffers::emit(const Record* records, std::size_t count) noexcept {
  ThreadBuffer* buffer = tls_owner == id_ ? tls_buffer : nullptr;
  if (buffer == nullptr && (buffer = register_thread()) == nullptr) {
    dropped_.fetch_add(count, std::memory_order_relaxed);
    return false;
  }
  Chunk* chunk = buffer->tail;
  std::uint32_t n = chunk->committed.load(std::memory_order_relaxed);
  if (n + count > kChunkRecords) {
    if (count > kChunkRecords || (chunk = grow(*buffer)) == nullptr) {
      dropped_.fetch_add(count, std::memory_order_relaxed);
      return false;
    }
    n = 0;
  }
  std::copy(records, records + count, chunk->records + n);
  chunk->committed.store(n + static_cast<std::uint32_t>(count), std::memory_order_release);
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
      recycle(chunk);
    }
    if (retired) finished.push_back(buffer);
  }
  if (!finished.empty()) {
    std::lock_guard lock(threads_mutex_);
    for (ThreadBuffer* buffer : finished) {
      threads_.erase(std::find(threads_.begin(), threads_.end(), buffer));
      recycle(buffer->head);
      delete buffer;
    }
  }
  return total;
}

}  // namespace cudascope::profiler
