#include "tool_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace cudascope::cuda::detail {

std::string library_beside_runtime(const std::string& library) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_beside_runtime), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string dir = info.dli_fname;
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  for (const std::string& candidate : {dir + library, dir + "../lib/" + library}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return {};
}

void start_tools_from_environment() {
  const char* bind = std::getenv("CUDASCOPE_METRICS");
  if (bind == nullptr || *bind == '\0') return;
  // A failure here must not stop the program it observes: say why and carry on.
  const std::string path = library_beside_runtime("libcudascope_metrics.so");
  void* library = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  using StartFn = int (*)(const char*);
  auto start = library ? reinterpret_cast<StartFn>(dlsym(library, "cudascope_metrics_autostart")) : nullptr;
  if (start == nullptr) {
    std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s ignored: libcudascope_metrics.so not found beside the runtime (%s)\n",
                 bind, library ? "no cudascope_metrics_autostart" : (path.empty() ? "not built?" : dlerror()));
    return;
  }
  if (start(bind) != 0) std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s: the metrics server did not start\n", bind);
}

}  // namespace cudascope::cuda::detail
