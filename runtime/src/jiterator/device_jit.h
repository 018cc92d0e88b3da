#pragma once
// jiterator on the cuda backend: the generated kernel (jit_source.h) compiled by NVRTC for
// the device's architecture, loaded with the CUDA runtime's library API (cudaLibraryLoadData,
// context-independent, so one load serves every device of that architecture), cached for the
// process and launched with cudaLaunchKernel.

#include "jit_kernel.h"

namespace cudascope::cuda::detail {

// Compiles `kernel`'s variant on first use and queues it on `stream` (a cudaStream_t) of
// `device`, which the caller has made current. Throws cuda::Error (see nvrtc_compiler.h, and
// the CUDA runtime's error when loading or launching fails).
void launch_device_jit_kernel(int device, void* stream, const JitKernel& kernel);

// The elements per thread of the flat kernel: 4, 2 or 1, the most that every operand's
// address is aligned for (an aligned vector load needs width * element size alignment).
int jit_vector_width(const JitKernel& kernel);

}  // namespace cudascope::cuda::detail
