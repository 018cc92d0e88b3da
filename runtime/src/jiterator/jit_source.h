#pragma once
// The source code jiterator compiles: the caller's code string wrapped in a generated kernel
// for one variant. Both backends' kernels share the per-element code (loads with conversion
// to the compute type, the call of the entry function, stores), so the sim computes what the
// GPU computes.

#include "jit_kernel.h"

#include <string>

namespace cudascope::cuda::detail {

// For the host compiler: defines `extern "C" void <kernel_name>(const CsJitArgs*)`, which
// runs every element on the calling thread.
std::string host_jit_source(const JitKernel& kernel, const std::string& kernel_name);

// For NVRTC: defines `extern "C" __global__ void <kernel_name>(CsJitArgs)`, a grid-stride
// loop of kJitBlockThreads-thread blocks, each thread taking `vector_width` consecutive
// elements in the flat (contiguous) variant.
std::string device_jit_source(const JitKernel& kernel, int vector_width, const std::string& kernel_name);
inline constexpr unsigned kJitBlockThreads = 128;

// The entry function of a code string by torch's rule: the name of the last template
// function defined in it; empty when there is none.
std::string entry_function_name(const std::string& code);

}  // namespace cudascope::cuda::detail
