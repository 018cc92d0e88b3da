// Context capture (raw frames now) and symbolisation (at snapshot time).
#include "history.h"

#include <cudascope/cuda/nvtx.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>

namespace cudascope::cuda::detail::alloc {

ContextPtr capture_context(bool cpp_stacks) {
  auto context = std::make_shared<Context>();
  if (cpp_stacks) {
    void* buffer[64];
    const int depth = backtrace(buffer, 64);
    // Skip this function and the allocator's own frames above the caller's.
    const int skip = depth > 3 ? 3 : 0;
    context->frames.assign(buffer + skip, buffer + depth);
  }
  const auto& ranges = nvtx::range_stack();
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

const memory::Frame& Symbolizer::frame(void* address) {
  auto found = cache_.find(address);
  if (found != cache_.end()) return found->second;
  memory::Frame f;
  Dl_info info{};
  // A return address points after the call; look up the byte before it.
  void* lookup = static_cast<char*>(address) - 1;
  if (dladdr(lookup, &info) != 0) {
    if (info.dli_sname != nullptr) {
      int status = 0;
      char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      f.name = (status == 0 && demangled != nullptr) ? demangled : info.dli_sname;
      std::free(demangled);
    } else {
      f.name = "??";
    }
    if (info.dli_fname != nullptr) {
      const std::string path = info.dli_fname;
      const auto slash = path.rfind('/');
      f.filename = slash == std::string::npos ? path : path.substr(slash + 1);
    }
    // No debug-line lookup: the offset in the object stands in for the line.
    f.line = static_cast<int>(static_cast<char*>(lookup) - static_cast<char*>(info.dli_fbase));
  } else {
    f.name = "??";
  }
  return cache_.emplace(address, std::move(f)).first->second;
}

const std::vector<memory::Frame>& Symbolizer::frames(const ContextPtr& context) {
  if (!context || context->frames.empty()) return empty_;
  auto found = contexts_.find(context.get());
  if (found != contexts_.end()) return found->second;
  std::vector<memory::Frame> out;
  out.reserve(context->frames.size());
  for (void* address : context->frames) out.push_back(frame(address));
  return contexts_.emplace(context.get(), std::move(out)).first->second;
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
