#pragma once
// NVRTC through the runtime's dlopen seam (tool_loader.h): the few entry points used are
// declared in the .cpp, so building the runtime needs neither NVRTC's headers nor its library.

#include <string>

namespace cudascope::cuda::detail {

// Code the driver loads: a CUBIN, or NUL-terminated PTX that the driver compiles for the
// device when NVRTC does not know the device's architecture.
struct DeviceImage {
  std::string bytes;
  bool cubin = false;
  std::string target;  // "sm_90", "compute_90"
};

// Compiles `source` (C++17, functions default to __device__) for compute capability `arch`
// (major * 10 + minor). Throws cuda::Error: kNotSupported when NVRTC cannot be loaded,
// kInvalidValue with NVRTC's log when the source does not compile. Thread-safe.
DeviceImage nvrtc_compile(const std::string& source, const std::string& program_name, int arch);

}  // namespace cudascope::cuda::detail
