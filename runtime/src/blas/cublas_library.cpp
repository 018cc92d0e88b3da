// cuBLAS through the runtime's dlopen seam (tool_loader.h): the few entry points used are
// declared here, so neither the headers nor the library are needed to build the runtime.
#include "blas_library.h"

#include "../check.h"
#include "../tool_loader.h"

namespace cudascope::cuda::detail::blas {
namespace {

using Status = int;  // cublasStatus_t; 0 is CUBLAS_STATUS_SUCCESS
constexpr int kOpN = 0;          // CUBLAS_OP_N
constexpr int kDefaultMath = 0;  // CUBLAS_DEFAULT_MATH

struct Cublas {
  Status (*create)(void** handle);
  Status (*set_stream)(void* handle, void* stream);
  Status (*set_workspace)(void* handle, void* workspace, std::size_t bytes);
  Status (*set_math_mode)(void* handle, int mode);
  Status (*sgemm)(void* handle, int transa, int transb, int m, int n, int k, const float* alpha, const float* a,
                  int lda, const float* b, int ldb, const float* beta, float* c, int ldc);
  const char* (*status_string)(Status status);
};

template <typename Fn>
void resolve(void* library, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(tools::find_symbol(library, {name}));
  CUDASCOPE_CHECK(fn != nullptr, error_code::kNotSupported, "dlsym", std::string("libcublas has no ") + name);
}

class CublasLibrary final : public BlasLibrary {
 public:
  explicit CublasLibrary(Backend& backend) : backend_(backend) {
    void* library = tools::open_cublas(tools::cublas_candidates());
    resolve(library, api_.create, "cublasCreate_v2");
    resolve(library, api_.set_stream, "cublasSetStream_v2");
    resolve(library, api_.set_workspace, "cublasSetWorkspace_v2");
    resolve(library, api_.set_math_mode, "cublasSetMathMode");
    resolve(library, api_.sgemm, "cublasSgemm_v2");
    resolve(library, api_.status_string, "cublasGetStatusString");
  }

  void* create(int device) override {
    // cuBLAS binds a handle to the thread's current context: make it the device's for the
    // call, then give the caller back its own current device (also when creating fails).
    const int previous = backend_.current_device();
    struct Restore {
      Backend& backend;
      int previous;
      int device;
      ~Restore() {
        if (previous == device) return;
        try {
          backend.set_device(previous);
        } catch (...) {
        }
      }
    } restore{backend_, previous, device};
    if (previous != device) backend_.set_device(device);
    void* handle = nullptr;
    check(api_.create(&handle), "cublasCreate_v2");
    // torch's default (allow_tf32 off for matmul): full float32 math.
    check(api_.set_math_mode(handle, kDefaultMath), "cublasSetMathMode");
    return handle;
  }

  void set_stream(void* handle, StreamHandle stream) override { check(api_.set_stream(handle, stream), "cublasSetStream_v2"); }

  void set_workspace(void* handle, void* workspace, std::size_t bytes) override {
    check(api_.set_workspace(handle, workspace, bytes), "cublasSetWorkspace_v2");
  }

  void sgemm_row_major(void* handle, int m, int n, int k, const float* a, const float* b, float* c) override {
    // cuBLAS is column-major: the row-major c = a @ b is the column-major c^T = b^T @ a^T.
    const float one = 1.0f, zero = 0.0f;
    check(api_.sgemm(handle, kOpN, kOpN, n, m, k, &one, b, n, a, k, &zero, c, n), "cublasSgemm_v2");
  }

 private:
  void check(Status status, const char* call) {
    if (status == 0) return;
    const char* text = api_.status_string(status);
    throw_error(error_code::kUnknown, call, __FILE__, __LINE__,
                "cuBLAS status " + std::to_string(status) + (text ? std::string(" (") + text + ")" : std::string()));
  }

  Backend& backend_;
  Cublas api_{};
};

}  // namespace

std::unique_ptr<BlasLibrary> make_cublas_library(Backend& backend) { return std::make_unique<CublasLibrary>(backend); }

}  // namespace cudascope::cuda::detail::blas
