#include <cudascope/analysis/event_kind.h>

namespace cudascope::analysis {
namespace {

// `cat` equals `lower` (all lower case) ignoring the case of `cat`.
bool same_name(std::string_view cat, std::string_view lower) {
  if (cat.size() != lower.size()) return false;
  for (std::size_t i = 0; i < cat.size(); ++i) {
    const char c = cat[i] >= 'A' && cat[i] <= 'Z' ? static_cast<char>(cat[i] - 'A' + 'a') : cat[i];
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace

EventKind category_kind(std::string_view cat) {
  if (same_name(cat, "kernel")) return EventKind::kernel;
  if (same_name(cat, "gpu_memcpy") || same_name(cat, "memcpy")) return EventKind::memcpy;
  if (same_name(cat, "gpu_memset") || same_name(cat, "memset")) return EventKind::memset;
  if (same_name(cat, "gpu_user_annotation")) return EventKind::gpu_annotation;
  if (same_name(cat, "nvtx") || same_name(cat, "user_annotation")) return EventKind::nvtx;
  if (same_name(cat, "cuda_runtime") || same_name(cat, "runtime")) return EventKind::runtime;
  if (same_name(cat, "cuda_driver")) return EventKind::driver;
  if (same_name(cat, "cpu_op") || same_name(cat, "operator")) return EventKind::cpu_op;
  if (same_name(cat, "python_function")) return EventKind::python;
  return EventKind::other;
}

EventKind event_kind(std::string_view cat, char ph) {
  const EventKind kind = category_kind(cat);
  if (kind == EventKind::other && (ph == 'i' || ph == 'I')) return EventKind::instant;
  return kind;
}

}  // namespace cudascope::analysis
