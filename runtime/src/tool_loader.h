#pragma once
// The one place where the runtime loads code by name (dlopen). None of these libraries is
// linked, so the runtime never depends on prometheus-cpp, CUPTI or the driver at build
// time; each seam says which library, how it is found, and what a missing one does:
//
//   metrics autostart    CUDASCOPE_METRICS=address:port: libcudascope_metrics.so beside the
//                        runtime, cudascope_metrics_autostart(bind). Missing: a warning on
//                        stderr, the program runs on unobserved.
//   injection library    CUDASCOPE_TRACE=path without CUDA_INJECTION64_PATH: points
//                        CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH at
//                        CUDASCOPE_INJECT_LIBRARY, else libcudascope_inject.so beside the
//                        runtime, when the runtime library is loaded. Missing: no trace.
//   sim attach           the sim backend loads CUDA_INJECTION64_PATH as the driver would and
//                        calls its cudascope_sim_attach() if it exports one (only cudascope's
//                        injection library does). Unloadable: a warning on stderr.
//   pluggable allocator  CUDAPluggableAllocator(path, alloc_fn, free_fn): the library and its
//                        two symbols; missing: cuda::Error (kInvalidValue) naming path/symbol.
//   NVML                 libnvidia-ml.so.1 (then libnvidia-ml.so), versioned entry points
//                        resolved newest first; missing: cuda::Error (kNotSupported).
//   cuBLAS               blas.h on the cuda backend: libcublas.so.13 / .12 / libcublas.so on
//                        the library path, then in $CUDA_HOME/lib64 and /usr/local/cuda/lib64;
//                        missing: cuda::Error (kNotSupported) naming each place tried.
//   NVRTC                jiterator.h on the cuda backend: libnvrtc.so.13 / .12 / libnvrtc.so on
//                        the library path, then in $CUDA_HOME/lib64 and /usr/local/cuda/lib64;
//                        missing: cuda::Error (kNotSupported) naming each place tried.
//
// "Beside the runtime" is util::library_beside_runtime(). Libraries opened here stay loaded
// until the process exits (their code and allocations may outlive any owner).
// Thread-safety: the functions are safe to call from any thread; each seam's caller
// ensures it runs once.

#include <initializer_list>
#include <string>
#include <vector>

namespace cudascope::cuda::detail::tools {

// dlopen(path_or_soname): RTLD_NOW, RTLD_GLOBAL when `global` (a tool whose symbols others
// bind to), else RTLD_LOCAL. nullptr with `error` set from dlerror() on failure.
void* open_library(const std::string& path_or_soname, bool global, std::string& error);
// The first of `names` that `library` exports (newest version first), nullptr if none.
void* find_symbol(void* library, std::initializer_list<const char*> names);

// Metrics autostart; called once when the runtime initialises its devices.
void start_metrics_from_environment();
// Sim attach; called by the sim backend while it is being constructed (the hook must not
// call back into the runtime).
void attach_sim_injection();

struct PluggableFunctions {
  void* alloc_fn;
  void* free_fn;
};
// Pluggable allocator: the two functions of the library at `path`.
PluggableFunctions open_pluggable_allocator(const std::string& path, const std::string& alloc_fn,
                                            const std::string& free_fn);
// NVML: the loaded library handle (symbols then found with find_symbol).
void* open_nvml();
// cuBLAS: the first of `candidates` that loads (default: cublas_candidates()); throws
// cuda::Error (kNotSupported) listing them with the last loader error when none does.
void* open_cublas(const std::vector<std::string>& candidates);
std::vector<std::string> cublas_candidates();
// NVRTC: as cuBLAS, from nvrtc_candidates().
void* open_nvrtc(const std::vector<std::string>& candidates);
std::vector<std::string> nvrtc_candidates();

}  // namespace cudascope::cuda::detail::tools
