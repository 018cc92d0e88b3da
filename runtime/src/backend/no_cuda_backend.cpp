// Built instead of cuda_backend.cpp when the CUDA toolkit is absent: sim only.
#include "backend.h"

#include <string>

namespace cudascope::cuda::detail {
std::string backend_error_name(int code) { return "cudaError(" + std::to_string(code) + ")"; }
std::unique_ptr<Backend> make_cuda_backend() { return nullptr; }
bool cuda_backend_has_device() { return false; }
}  // namespace cudascope::cuda::detail
