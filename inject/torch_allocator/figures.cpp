// The C functions behind cudascope_torch.memory_stats(), memory_summary(), dump_snapshot(),
// record_memory_history() and reset_peak_memory_stats(): PyTorch cannot ask a pluggable
// allocator for them, so the Python module reads them here with ctypes. None throws.
#include "torch_allocator.h"

#include "last_error.h"
#include "nvtx_bridge.h"
#include "torch_errors.h"

#include <cudascope/cuda/memory.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#define CUDASCOPE_TORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

char* copy_out(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) {
    cudascope::torch_allocator::set_last_error("out of host memory for " + std::to_string(text.size()) + " bytes");
    return nullptr;
  }
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Runs `body`, turning an exception into last_error and `failed`.
template <typename T, typename Body>
T guarded(T failed, Body body) noexcept {
  try {
    cudascope::torch_allocator::clear_last_error();
    return body();
  } catch (const std::exception& e) {
    cudascope::torch_allocator::set_last_error(e.what());
  } catch (...) {
    cudascope::torch_allocator::set_last_error("unknown exception");
  }
  return failed;
}

std::optional<std::string> optional_text(const char* text) {
  if (text == nullptr) return std::nullopt;
  return std::string(text);
}

}  // namespace

using namespace cudascope;

CUDASCOPE_TORCH_EXPORT int cudascope_torch_bind_torch(const char* library_path) {
  return guarded(0, [&] { return torch_allocator::bind_torch(library_path) ? 1 : 0; });
}

CUDASCOPE_TORCH_EXPORT char* cudascope_torch_memory_stats_json(int device) {
  return guarded<char*>(nullptr, [&] {
    // Keys are PyTorch's identifiers (letters, digits, '_' and '.'): nothing to escape.
    std::string json = "{";
    for (const auto& [key, value] : cuda::memory_stats(device)) {
      if (json.size() > 1) json += ", ";
      json += '"' + key + "\": " + std::to_string(value);
    }
    json += '}';
    return copy_out(json);
  });
}

CUDASCOPE_TORCH_EXPORT char* cudascope_torch_memory_summary(int device, int abbreviated) {
  return guarded<char*>(nullptr, [&] { return copy_out(cuda::memory_summary(device, abbreviated != 0)); });
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_free_text(char* text) { std::free(text); }

CUDASCOPE_TORCH_EXPORT int cudascope_torch_dump_snapshot(const char* path) {
  return guarded(-1, [&] {
    cuda::memory::dump_snapshot(path == nullptr ? "" : path);
    return 0;
  });
}

CUDASCOPE_TORCH_EXPORT int cudascope_torch_record_memory_history(const char* enabled, const char* context,
                                                                 const char* stacks, size_t max_entries) {
  return guarded(-1, [&] {
    cuda::memory::record_memory_history(optional_text(enabled), optional_text(context),
                                        stacks == nullptr ? "all" : stacks, max_entries);
    torch_allocator::set_borrowing(enabled != nullptr);
    return 0;
  });
}

CUDASCOPE_TORCH_EXPORT int cudascope_torch_reset_peak_memory_stats(int device) {
  return guarded(-1, [&] {
    cuda::reset_peak_memory_stats(device);
    return 0;
  });
}

CUDASCOPE_TORCH_EXPORT const char* cudascope_torch_last_error(void) {
  return torch_allocator::last_error().c_str();
}
