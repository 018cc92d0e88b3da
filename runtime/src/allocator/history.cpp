// Context capture (raw frames now) and symbolisation (at snapshot time).
#include "history.h"
#include "util/elf_symbols.h"

#include <cudascope/cuda/nvtx.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <pthread.h>

#include <cstdlib>
#include <mutex>
#include <unordered_set>

namespace cudascope::cuda::detail::alloc {

namespace {

// The calling thread's stack top, for bounding the frame-pointer walk.
std::uintptr_t stack_top() {
  thread_local std::uintptr_t top = [] {
    pthread_attr_t attr;
    void* base = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return std::uintptr_t{0};
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_destroy(&attr);
    return reinterpret_cast<std::uintptr_t>(base) + size;
  }();
  return top;
}

// Walks frame pointers (tens of nanoseconds, against microseconds for an unwinder). Every
// frame pointer must lie between here and the stack top and grow monotonically, so a frame
// compiled without frame pointers ends the walk instead of faulting.
__attribute__((noinline)) int walk_frames(void** out, int max_depth) {
  int depth = 0;
  const auto low = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const std::uintptr_t high = stack_top();
  auto fp = low;
  while (depth < max_depth && fp >= low && fp + 2 * sizeof(void*) <= high && fp % sizeof(void*) == 0) {
    void* const* frame = reinterpret_cast<void* const*>(fp);
    void* ret = frame[1];
    if (ret == nullptr) break;
    out[depth++] = ret;
    const auto next = reinterpret_cast<std::uintptr_t>(frame[0]);
    if (next <= fp) break;
    fp = next;
  }
  return depth;
}

}  // namespace

ContextPtr capture_context(bool cpp_stacks) {
  void* buffer[64];
  int depth = 0;
  if (cpp_stacks) depth = walk_frames(buffer, 64);
  const auto& ranges = nvtx::range_stack();
  if (depth == 0 && ranges.empty()) return nullptr;  // nothing to keep: no allocation
  auto context = std::make_shared<Context>();
  // Skip the allocator's own frames (capture, gather, malloc/free) above the caller's.
  const int skip = depth > 3 ? 3 : 0;
  context->frames.assign(buffer + skip, buffer + depth);
  if (!ranges.empty()) context->nvtx = ranges;
  return context;
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

std::size_t Symbolizer::StackHash::operator()(const std::vector<void*>& v) const noexcept {
  std::size_t h = v.size();
  for (void* p : v) h = (h ^ reinterpret_cast<std::uintptr_t>(p)) * 0x100000001b3ULL;
  return h;
}

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
  if (!context || context->frames.empty()) return empty_;
  auto known = by_context_.find(context.get());
  if (known != by_context_.end()) return *known->second;
  // Identical stacks (the same call site) are symbolised once.
  auto [it, inserted] = by_stack_.try_emplace(context->frames);
  if (inserted) {
    it->second.reserve(context->frames.size());
    for (void* address : context->frames) it->second.push_back(frame(address));
  }
  by_context_.emplace(context.get(), &it->second);
  return it->second;
}

std::string join_nvtx(const ContextPtr& context) {
  std::string out;
  if (!context) return out;
  for (const auto& range : context->nvtx) {
    if (!out.empty()) out += ';';
    out += range;
  }
  return out;
}

}  // namespace cudascope::cuda::detail::alloc
