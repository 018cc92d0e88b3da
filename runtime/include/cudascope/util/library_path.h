#pragma once
// Where cudascope's own shared libraries are: beside the runtime library. The one "library
// beside me" lookup, used by the runtime's tool loader (metrics, injection) and by programs
// that hand a library to another process (cudascope run), so the build tree and any
// installed prefix behave alike without LD_LIBRARY_PATH.

#include <string>

namespace cudascope::util {

// The directory holding libcudascope_runtime.so (with a trailing '/'), found with dladdr
// on the runtime's own code; empty if it cannot be told.
std::string runtime_library_directory();

// The path of `library` (a file name such as "libcudascope_inject.so") in the runtime
// library's directory, else in ../lib from there; empty when neither is readable.
std::string library_beside_runtime(const std::string& library);

}  // namespace cudascope::util
