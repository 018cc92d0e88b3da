#pragma once
// Checked calls: throw cuda::Error naming the call, file and line.

#include <cudascope/cuda/error.h>

#include <string>

namespace cudascope::cuda::detail {
// The backend's name for an error code not in error_code:: (cudaGetErrorName on cuda).
std::string backend_error_name(int code);
[[noreturn]] void throw_error(int code, const char* call, const char* file, int line, const std::string& detail = {});
}  // namespace cudascope::cuda::detail

// Raises cuda::Error with `code` when a condition on a simulated or runtime-level call fails.
#define CUDASCOPE_CHECK(condition, code, call, message)                                            \
  do {                                                                                            \
    if (!(condition)) ::cudascope::cuda::detail::throw_error((code), (call), __FILE__, __LINE__, (message)); \
  } while (0)
