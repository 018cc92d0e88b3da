#include <cudascope/cuda/instrumentation.h>

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace cudascope::cuda::instrumentation {

std::uint64_t host_time_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(now.tv_nsec);
}

namespace {

// CUDASCOPE_TRACE=path: record this process from start to exit. The recording is done by
// cudascope's injection library, which the driver (cuda) or the sim backend loads from
// CUDA_INJECTION64_PATH; when only CUDASCOPE_TRACE is set, point the injection variables at
// the library installed beside this one (lib/, or lib/ of the build tree) before anything
// initialises CUDA or NVTX. Runs when the runtime library is loaded.
std::string find_injection_library() {
  if (const char* explicit_path = std::getenv("CUDASCOPE_INJECT_LIBRARY")) return explicit_path;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&host_time_ns), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  for (const char* candidate : {"libcudascope_inject.so", "../lib/libcudascope_inject.so"}) {
    std::string path = dir + candidate;
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return {};
}

const bool trace_from_environment = [] {
  const char* trace = std::getenv("CUDASCOPE_TRACE");
  if (trace == nullptr || *trace == '\0' || std::getenv("CUDA_INJECTION64_PATH") != nullptr) return false;
  const std::string library = find_injection_library();
  if (library.empty()) return false;
  setenv("CUDA_INJECTION64_PATH", library.c_str(), 0);
  setenv("NVTX_INJECTION64_PATH", library.c_str(), 0);
  return true;
}();

}  // namespace
}  // namespace cudascope::cuda::instrumentation
