#pragma once
// Short names for C++ functions and kernels, as Nsight Systems and Perfetto show them:
// "void at::native::elementwise_kernel<128, 4, ...>(int, ...)" reads
// "at::native::elementwise_kernel". The return type, template arguments, parameter lists
// and trailing qualifiers are dropped; namespaces, "(anonymous namespace)", lambdas and
// operator names are kept. Text that does not look like a C++ signature (Python frame
// names such as "<module>", plain kernel names, NVTX ranges) comes back unchanged.
//
// Pure functions, no shared state: callable from any thread.

#include <string>
#include <string_view>

namespace cudascope::analysis {

// True when `name` looks like a demangled C++ signature (a "::", a parameter list or
// template arguments after an identifier).
bool looks_like_cpp_signature(std::string_view name);

// The short form of `name` (unchanged when it is not a C++ signature, or when nothing
// would be left).
std::string shorten_cpp_name(std::string_view name);

}  // namespace cudascope::analysis
