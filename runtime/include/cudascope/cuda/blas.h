#pragma once
// cuBLAS handles as torch.cuda keeps them (torch.cuda.current_blas_handle), and a float32
// matmul that uses them.
//
// Handles come from a pool as PyTorch's DeviceThreadHandlePool: each thread takes one handle
// per device on first use and gives it back to the pool when the thread exits, so a later
// thread reuses it instead of creating another. Every current_blas_handle() call sets the
// handle to the current stream and gives it the workspace of that (handle, stream) pair: one
// block from the caching allocator per pair, allocated on that stream, of the size
// CUBLAS_WORKSPACE_CONFIG asks for (":SIZE_KiB:COUNT" terms, summed, as torch parses it;
// default 4096 KiB x 2 + 16 KiB x 8, or 4096 KiB x 8 on compute capability 9 to 12). The
// workspaces show in memory_stats and snapshots like any allocation and stay until
// clear_blas_workspaces().
//
// On the cuda backend cuBLAS is loaded at first use (libcublas.so.13 or .12, from the library
// path, $CUDA_HOME/lib64 or /usr/local/cuda/lib64; the runtime does not link it); when it is
// missing the call throws cuda::Error (kNotSupported) saying where it looked. On the sim
// backend a handle is an opaque object of the sim and matmul runs on the stream's worker.
//
// Thread-safety: every function is thread-safe.

#include <cudascope/cuda/stream.h>
#include <cudascope/cuda/tensor.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace cudascope::cuda {

// torch.cuda.current_blas_handle(): this thread's handle for the current device, set to the
// current stream, with its workspace. A cublasHandle_t on the cuda backend.
void* current_blas_handle();

// The workspace size each (handle, stream) gets on `device` (torch's getChosenWorkspaceSize;
// read from CUBLAS_WORKSPACE_CONFIG once per device).
std::size_t blas_workspace_size(int device = -1);
// torch's parsing of CUBLAS_WORKSPACE_CONFIG: the sum of SIZE KiB x COUNT over every
// ":SIZE:COUNT" in `config`; std::nullopt when there is none (torch then warns and uses the
// default).
std::optional<std::size_t> parse_cublas_workspace_config(std::string_view config);

// torch._C._cuda_clearCublasWorkspaces(): returns every workspace to the caching allocator;
// the next current_blas_handle() allocates again.
void clear_blas_workspaces();
// The same for the workspaces of one stream (a stream that is about to go away).
void clear_blas_workspaces_for_stream(const Stream& stream);

// The pool's figures on `device`.
struct BlasPoolStats {
  std::size_t handles_created = 0;    // never more than the most threads that held one at once
  std::size_t handles_available = 0;  // given back by exited threads, waiting for reuse
  std::size_t workspaces = 0;         // (handle, stream) pairs with a workspace
  std::size_t workspace_bytes = 0;
};
BlasPoolStats blas_pool_stats(int device = -1);

}  // namespace cudascope::cuda

namespace cudascope {

// a @ b for 2-D float32 tensors on the same CUDA device (m x k times k x n gives m x n), on
// the current stream: cublasSgemm with the current handle on cuda (default math, no TF32,
// as torch's default), a host loop on the sim stream's worker.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace cudascope
