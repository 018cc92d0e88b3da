#include "tool_loader.h"

#include "check.h"

#include <cudascope/util/library_path.h>
#include <cudascope/util/env_value.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace cudascope::cuda::detail::tools {

void* open_library(const std::string& path_or_soname, bool global, std::string& error) {
  void* library = dlopen(path_or_soname.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (library == nullptr) {
    const char* why = dlerror();
    error = why != nullptr ? why : "unknown error";
  }
  return library;
}

void* find_symbol(void* library, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = dlsym(library, name)) return symbol;
  }
  return nullptr;
}

void start_metrics_from_environment() {
  const std::string bind_text = util::env_text("CUDASCOPE_METRICS").value_or("");
  if (bind_text.empty()) return;
  const char* bind = bind_text.c_str();
  // A failure here must not stop the program it observes: say why and carry on.
  const std::string path = util::library_beside_runtime("libcudascope_metrics.so");
  std::string error = "not built?";
  void* library = path.empty() ? nullptr : open_library(path, false, error);
  using StartFn = int (*)(const char*);
  auto start = library ? reinterpret_cast<StartFn>(find_symbol(library, {"cudascope_metrics_autostart"})) : nullptr;
  if (start == nullptr) {
    std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s ignored: libcudascope_metrics.so not found beside the runtime (%s)\n",
                 bind, library ? "no cudascope_metrics_autostart" : error.c_str());
    return;
  }
  if (start(bind) != 0) std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s: the metrics server did not start\n", bind);
}

namespace {

// CUDASCOPE_TRACE=path: record this process from start to exit. The recording is done by
// cudascope's injection library, which the driver (cuda) or the sim backend loads from
// CUDA_INJECTION64_PATH; when only CUDASCOPE_TRACE is set, point the injection variables at
// the library beside this one before anything initialises CUDA or NVTX.
std::string injection_library() {
  if (const auto explicit_path = util::env_text("CUDASCOPE_INJECT_LIBRARY")) return *explicit_path;
  return util::library_beside_runtime("libcudascope_inject.so");
}

// Runs when the runtime library is loaded.
const bool trace_from_environment = [] {
  if (util::env_text("CUDASCOPE_TRACE").value_or("").empty() || std::getenv("CUDA_INJECTION64_PATH") != nullptr) return false;
  const std::string library = injection_library();
  if (library.empty()) return false;
  setenv("CUDA_INJECTION64_PATH", library.c_str(), 0);
  setenv("NVTX_INJECTION64_PATH", library.c_str(), 0);
  return true;
}();

}  // namespace

void attach_sim_injection() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  std::string error;
  // Global: the injection library's NVTX handlers are found by the programs it observes.
  void* library = open_library(path, true, error);
  if (library == nullptr) {
    std::fprintf(stderr, "cudascope: CUDA_INJECTION64_PATH=%s could not be loaded: %s\n", path, error.c_str());
    return;
  }
  using AttachFn = int (*)();
  if (auto attach = reinterpret_cast<AttachFn>(find_symbol(library, {"cudascope_sim_attach"}))) attach();
}

PluggableFunctions open_pluggable_allocator(const std::string& path, const std::string& alloc_fn,
                                            const std::string& free_fn) {
  std::string error;
  void* library = open_library(path, false, error);
  if (library == nullptr)
    throw_error(error_code::kInvalidValue, "CUDAPluggableAllocator", __FILE__, __LINE__, path + ": cannot load: " + error);
  const PluggableFunctions fns{find_symbol(library, {alloc_fn.c_str()}), find_symbol(library, {free_fn.c_str()})};
  if (fns.alloc_fn == nullptr || fns.free_fn == nullptr) {
    throw_error(error_code::kInvalidValue, "CUDAPluggableAllocator", __FILE__, __LINE__,
                path + ": symbol '" + (fns.alloc_fn == nullptr ? alloc_fn : free_fn) + "' not found");
  }
  return fns;
}

void* open_nvml() {
  std::string error;
  void* library = open_library("libnvidia-ml.so.1", false, error);
  if (library == nullptr) library = open_library("libnvidia-ml.so", false, error);
  CUDASCOPE_CHECK(library != nullptr, error_code::kNotSupported, "dlopen(libnvidia-ml.so.1)",
                  "NVML is not available (it comes with the NVIDIA driver): " + error);
  return library;
}

namespace {

// A CUDA toolkit library by its sonames, then in the toolkit's directory ($CUDA_HOME, then
// /usr/local/cuda): programs that did not link the library themselves rarely have that
// directory on their library path.
std::vector<std::string> toolkit_candidates(const std::vector<std::string>& sonames) {
  std::vector<std::string> candidates = sonames;
  std::vector<std::string> directories;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0') directories.push_back(home);
  directories.push_back("/usr/local/cuda");
  for (const auto& directory : directories) {
    for (const auto& soname : sonames) candidates.push_back(directory + "/lib64/" + soname);
  }
  return candidates;
}

// The first of `candidates` that loads; cuda::Error (kNotSupported) listing every one tried,
// with the last loader error, when none does.
void* open_toolkit_library(const std::vector<std::string>& candidates, const char* call, const std::string& what) {
  std::string error;
  for (const auto& candidate : candidates) {
    if (void* library = open_library(candidate, false, error)) return library;
  }
  std::string tried;
  for (const auto& candidate : candidates) tried += (tried.empty() ? "" : ", ") + candidate;
  throw_error(error_code::kNotSupported, call, __FILE__, __LINE__,
              what + " is not available (it comes with the CUDA toolkit; tried " + tried + "): " + error);
}

}  // namespace

std::vector<std::string> cublas_candidates() {
  return toolkit_candidates({"libcublas.so.13", "libcublas.so.12", "libcublas.so"});
}

void* open_cublas(const std::vector<std::string>& candidates) {
  return open_toolkit_library(candidates, "dlopen(libcublas.so)", "cuBLAS");
}

std::vector<std::string> nvrtc_candidates() {
  return toolkit_candidates({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
}

void* open_nvrtc(const std::vector<std::string>& candidates) {
  return open_toolkit_library(candidates, "dlopen(libnvrtc.so)", "NVRTC");
}

}  // namespace cudascope::cuda::detail::tools
