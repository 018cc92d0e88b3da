#pragma once
// What a trace event is, from its category and phase: the one reading of category names that
// trace statistics, rank summaries, collective pairing, launch scopes, the model's device
// detection and the viewer's range summary (timeline_summary.h) share.
//
// Category names are those Kineto (torch.profiler) writes, which cudascope's traces share,
// compared without regard to case: Kineto's names changed over the years (before April 2022,
// PyTorch 1.8 to 1.11: "Kernel", "Memcpy", "Memset", "gpu_user_Annotation"; since: "kernel",
// "gpu_memcpy", "gpu_memset", "gpu_user_annotation"; runtime calls were "Runtime" before
// November 2021, PyTorch 1.8 to 1.10; CPU ops were "Operator" before June 2021).
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string_view>

namespace cudascope::analysis {

enum class EventKind : std::uint8_t {
  kernel,          // cat "kernel"
  memcpy,          // "gpu_memcpy" ("Memcpy")
  memset,          // "gpu_memset" ("Memset")
  gpu_annotation,  // "gpu_user_annotation": an NVTX/record_function range projected on a stream
  nvtx,            // "nvtx", "user_annotation": ranges the program marked
  runtime,         // "cuda_runtime" ("Runtime")
  driver,          // "cuda_driver"
  cpu_op,          // "cpu_op", "operator"
  python,          // "python_function"
  instant,         // "i"/"I" events of other categories
  other,
};
EventKind event_kind(std::string_view cat, char ph);
// The kind a category names whatever the phase (never `instant`).
EventKind category_kind(std::string_view cat);
// Work a GPU stream is busy with (kernels, copies, memsets).
inline bool is_gpu_work(EventKind k) { return k == EventKind::kernel || k == EventKind::memcpy || k == EventKind::memset; }
// What only a GPU's process holds: its work and the annotations projected on its streams.
inline bool is_device_event(EventKind k) { return is_gpu_work(k) || k == EventKind::gpu_annotation; }

}  // namespace cudascope::analysis
