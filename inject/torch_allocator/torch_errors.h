#pragma once
// PyTorch's exception types, resolved at run time in the process's own torch: the library
// links nothing of torch, yet an out-of-memory raised from its alloc hook must reach Python
// as torch.OutOfMemoryError. PyTorch's pluggable allocator does not check the pointer alloc_fn
// returns (a NULL would become a tensor without memory), so failures are raised as C++
// exceptions, which PyTorch translates at its Python boundary.

#include <string>

namespace cudascope::torch_allocator {

// Binds c10::OutOfMemoryError from `library_path` (already loaded). True when bound; false
// with last_error naming the missing library or symbol. Either way the hooks raise C++
// exceptions from now on: the caller said PyTorch is the one calling them.
bool bind_torch(const char* library_path);

// True when the hooks should throw: bound explicitly, or PyTorch's libc10 is found loaded in
// the process (checked once, at the first failure). False under plain C callers (ctypes).
bool torch_present() noexcept;

// Throws c10::OutOfMemoryError(message) when bound, else std::runtime_error(message).
[[noreturn]] void throw_out_of_memory(const std::string& message);

}  // namespace cudascope::torch_allocator
