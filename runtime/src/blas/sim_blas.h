#pragma once
// The sim backend's BLAS handle: an opaque object that remembers its device, stream and
// workspace, as a cublasHandle_t does (tests read it to check what the pool set).

#include "../backend/backend.h"

#include <cstddef>

namespace cudascope::cuda::detail::blas {

struct SimBlasHandle {
  int device = 0;
  StreamHandle stream = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

}  // namespace cudascope::cuda::detail::blas
