// The sim backend's BLAS: handles are SimBlasHandle objects; sgemm is a tensor kernel on the
// handle's stream (reported to the observer as a kernel, as CUPTI reports cuBLAS's).
#include "blas_library.h"
#include "sim_blas.h"

#include "../check.h"

namespace cudascope::cuda::detail::blas {
namespace {

class SimBlasLibrary final : public BlasLibrary {
 public:
  explicit SimBlasLibrary(Backend& backend) : backend_(backend) {}

  void* create(int device) override { return new SimBlasHandle{device}; }

  void set_stream(void* handle, StreamHandle stream) override {
    SimBlasHandle& h = *static_cast<SimBlasHandle*>(handle);
    h.stream = stream;
    // As cublasSetStream: the handle falls back to the library's own workspace.
    h.workspace = nullptr;
    h.workspace_bytes = 0;
  }

  void set_workspace(void* handle, void* workspace, std::size_t bytes) override {
    SimBlasHandle& h = *static_cast<SimBlasHandle*>(handle);
    h.workspace = workspace;
    h.workspace_bytes = bytes;
  }

  void sgemm_row_major(void* handle, int m, int n, int k, const float* a, const float* b, float* c) override {
    const SimBlasHandle& h = *static_cast<SimBlasHandle*>(handle);
    TensorKernel kernel;
    kernel.op = TensorKernel::Op::kMatmul;
    kernel.dtype = DType::kFloat32;
    kernel.numel = static_cast<std::int64_t>(m) * n;
    kernel.out = c;
    kernel.a = a;
    kernel.b = b;
    kernel.mnk[0] = m;
    kernel.mnk[1] = n;
    kernel.mnk[2] = k;
    backend_.launch_tensor_kernel(h.device, h.stream, kernel);
  }

 private:
  Backend& backend_;
};

}  // namespace

std::unique_ptr<BlasLibrary> make_sim_blas_library(Backend& backend) { return std::make_unique<SimBlasLibrary>(backend); }

}  // namespace cudascope::cuda::detail::blas
