#pragma once
// jiterator on the sim backend: the generated host source (jit_source.h) built by the host
// C++ compiler into a shared object, loaded with dlopen, cached for the process.

#include "jit_kernel.h"

#include <string>
#include <vector>

namespace cudascope::cuda::detail {

struct HostJitKernel {
  using Function = void (*)(const JitArgs* args);
  Function function = nullptr;  // runs every element on the calling thread
  std::string name;             // jit_kernel_name(kernel, 1): the name profilers see
};

// The compiled kernel for `kernel`'s variant: compiled on the calling thread on first use.
// Throws cuda::Error: kNotSupported when no compiler is found (naming what was tried),
// kInvalidValue with the compiler's log when the code does not compile.
const HostJitKernel& host_jit_kernel(const JitKernel& kernel);

// The compiler command: $CXX split into words when set, else the first of c++ and g++ on
// PATH. Empty when none is found; `tried` then lists the places looked at.
std::vector<std::string> host_compiler_command(std::string& tried);

}  // namespace cudascope::cuda::detail
