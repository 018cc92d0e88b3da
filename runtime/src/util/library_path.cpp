#include <cudascope/util/library_path.h>

#include <dlfcn.h>
#include <unistd.h>

namespace cudascope::util {

std::string runtime_library_directory() {
  Dl_info info{};
  // Any function of this library names its file.
  if (dladdr(reinterpret_cast<void*>(&runtime_library_directory), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string file = info.dli_fname;
  const std::size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? std::string("./") : file.substr(0, slash + 1);
}

std::string library_beside_runtime(const std::string& library) {
  const std::string dir = runtime_library_directory();
  if (dir.empty()) return {};
  for (const std::string& candidate : {dir + library, dir + "../lib/" + library}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace cudascope::util
