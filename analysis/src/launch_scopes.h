#pragma once
// Which CPU-side slice was open on the thread that launched a kernel: the record_param_comms
// op or the NCCL range a collective's kernel was launched in (collective_pairing.cpp).
//
// A kernel's launch call is the slice its ac2g flow starts from. Without a flow, it is the API
// call (cat "cuda_runtime", Kineto's older "Runtime", or "cuda_driver") carrying the kernel's
// "correlation": NCCL (2.22 on) launches with the driver's cuLaunchKernelEx, which cudascope
// records only inside NCCL's ranges (profiler/src/nccl_nvtx.h), with no flow.
//
// Not thread-safe: built and used by one analysis; each builds its indexes when first needed.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cudascope::analysis::detail {

// The slice each kernel's ac2g flow starts from: its launch call.
class LaunchFlows {
 public:
  explicit LaunchFlows(const TraceModel& model) : model_(model) {}
  // nullptr when no flow reaches the kernel.
  const TraceModel::Event* launch_of(std::uint32_t kernel);

 private:
  const TraceModel& model_;
  std::optional<std::unordered_map<std::uint32_t, std::uint32_t>> launch_of_kernel_;
};

// Slices of one kind on the CPU tracks, and for a kernel the one enclosing its launch call.
// Slices of one kind do not nest (a record_param_comms op, an NCCL call's range), so the last
// one starting at or before a call is the only candidate. Call order: add... -> sort_by_start
// -> of_kernel...
class LaunchScopes {
 public:
  LaunchScopes(const TraceModel& model, LaunchFlows& flows) : model_(model), flows_(flows) {}
  void add(std::uint32_t slice) { by_track_[model_.event(slice).track].push_back(slice); }
  void sort_by_start();
  // The slice open on the thread when the kernel was launched; nullptr when none was.
  const TraceModel::Event* of_kernel(std::uint32_t kernel);

 private:
  const TraceModel::Event* enclosing(const TraceModel::Event& call) const;
  const TraceModel::Event* by_correlation(std::uint32_t kernel);
  void index_calls_inside(std::uint32_t scope);

  const TraceModel& model_;
  LaunchFlows& flows_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_track_;
  // The API calls inside the slices, by correlation id: built when a kernel first has no flow.
  std::optional<std::unordered_map<std::int64_t, std::uint32_t>> scope_of_call_;
};

}  // namespace cudascope::analysis::detail
