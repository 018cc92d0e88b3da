#pragma once
// Allocation history: what record_memory_history keeps. A Context is captured on the
// allocation path as raw return addresses and the thread's NVTX range stack; it is
// symbolised only when a snapshot is taken. The TraceBuffer is the ring buffer of
// actions (PyTorch's TraceEntryRingBuffer). Not thread-safe: the device lock guards a
// TraceBuffer; Contexts are immutable once made.

#include <cudascope/cuda/memory.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::detail::alloc {

// When to keep a context, as PyTorch's RecordContext.
enum class RecordContext : int { kNever = 0, kState = 1, kAlloc = 2, kAll = 3 };

struct Context {
  std::vector<void*> frames;       // raw return addresses, innermost first
  std::vector<std::string> nvtx;   // the thread's NVTX ranges, outermost first
};
using ContextPtr = std::shared_ptr<const Context>;

// Process-wide recording settings, read on every allocation (one relaxed load when off).
struct HistorySettings {
  bool record_trace = false;  // enabled == "all": keep the ring buffer
  RecordContext when = RecordContext::kNever;
  bool cpp_stacks = false;
  std::size_t max_entries = 1;
};

// Captures the calling thread's context (cheap: no symbolisation).
ContextPtr capture_context(bool cpp_stacks);

enum class Action : std::uint8_t {
  kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kSegmentMap, kSegmentUnmap, kSnapshot, kOom,
  kUserDefined
};
const char* action_name(Action action) noexcept;

struct TraceRecord {
  Action action;
  std::uintptr_t addr;  // device_free for kOom
  std::size_t size;
  std::int64_t stream;
  std::uint64_t time_ns;  // instrumentation::host_time_ns()
  ContextPtr context;
};

class TraceBuffer {
 public:
  void set_max_entries(std::size_t n) { max_entries_ = n < 1 ? 1 : n; }
  void insert(TraceRecord&& record) {
    if (entries_.size() < max_entries_) {
      entries_.push_back(std::move(record));
    } else {
      entries_[next_] = std::move(record);
      if (++next_ == max_entries_) next_ = 0;
    }
  }
  void clear() {
    entries_.clear();
    next_ = 0;
  }
  // Oldest first.
  template <typename F>
  void for_each(F f) const {
    for (std::size_t i = next_; i < entries_.size(); ++i) f(entries_[i]);
    for (std::size_t i = 0; i < next_; ++i) f(entries_[i]);
  }
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::vector<TraceRecord> entries_;
  std::size_t next_ = 0;
  std::size_t max_entries_ = 1;
};

// Turns raw frames into (name, file, line) once per address and once per distinct stack
// for a whole snapshot; names are interned for the life of the process.
class Symbolizer {
 public:
  const std::vector<memory::Frame>& frames(const ContextPtr& context);

 private:
  struct StackHash {
    std::size_t operator()(const std::vector<void*>& v) const noexcept;
  };
  memory::Frame frame(void* address);
  std::unordered_map<void*, memory::Frame> cache_;
  std::unordered_map<const Context*, const std::vector<memory::Frame>*> by_context_;
  std::unordered_map<std::vector<void*>, std::vector<memory::Frame>, StackHash> by_stack_;
  std::vector<memory::Frame> empty_;
};

// The NVTX stack as user_metadata.
std::string join_nvtx(const ContextPtr& context);

}  // namespace cudascope::cuda::detail::alloc
