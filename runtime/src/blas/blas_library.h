#pragma once
// What the handle pool and matmul need of a BLAS library: cuBLAS (loaded at run time) on the
// cuda backend, the sim's stand-in on the sim backend. Handles are never destroyed (as
// torch's pool, which leaks them: destroying at exit races the CUDA context's teardown).
// Thread-safety: a handle is used by one thread at a time (the pool sees to it).

#include "../backend/backend.h"

#include <cstddef>
#include <memory>

namespace cudascope::cuda::detail::blas {

class BlasLibrary {
 public:
  virtual ~BlasLibrary() = default;
  // A new handle on `device`.
  virtual void* create(int device) = 0;
  virtual void set_stream(void* handle, StreamHandle stream) = 0;
  virtual void set_workspace(void* handle, void* workspace, std::size_t bytes) = 0;
  // c (m x n) = a (m x k) @ b (k x n), contiguous row-major float32, on the handle's stream.
  virtual void sgemm_row_major(void* handle, int m, int n, int k, const float* a, const float* b, float* c) = 0;
};

// The library for the process's backend, loaded at first use; throws cuda::Error when cuBLAS
// is missing.
BlasLibrary& library();

std::unique_ptr<BlasLibrary> make_cublas_library(Backend& backend);
std::unique_ptr<BlasLibrary> make_sim_blas_library(Backend& backend);

}  // namespace cudascope::cuda::detail::blas
