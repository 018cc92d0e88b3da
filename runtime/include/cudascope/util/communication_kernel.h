#pragma once
// Which kernels are communication: NCCL's (and RCCL's, which keep the names). The trace
// writer (exporters/) marks them ("args":{"communication":true,"collective":"AllReduce"});
// the analysis recognises them by the same rule in traces that carry no mark (torch.profiler's
// Kineto traces keep cat "kernel" and the plain name), so both agree on every trace. It lives
// here, in the runtime, because that is the one component both the exporters and the analysis
// build on: neither has to depend on the other for it.
//
// Names as CUPTI reports them, demangled:
//   ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)   NCCL >= 2.19
//   ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)
//   ncclAllReduceRingLLKernel_sum_f32(ncclColl)                                  older
// Holistic Trace Analysis classifies by "nccl" in the name; a prefix is stricter about user
// kernels that merely mention it.

#include <string_view>

namespace cudascope::util {

inline bool is_communication_kernel(std::string_view name) noexcept { return name.substr(0, 4) == "nccl"; }

// "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "SendRecv", ... from a kernel name
// of the two current forms; empty for other names.
inline std::string_view collective_of(std::string_view name) noexcept {
  for (std::string_view prefix : {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_")}) {
    if (name.substr(0, prefix.size()) != prefix) continue;
    name.remove_prefix(prefix.size());
    return name.substr(0, name.find_first_of("_("));
  }
  return {};
}

}  // namespace cudascope::util
