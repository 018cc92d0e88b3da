// Throwing a c10::OutOfMemoryError without torch's headers: the object is built by c10's own
// constructor, c10::Error(SourceLocation, std::string) (OutOfMemoryError adds no members and
// inherits that constructor), then given OutOfMemoryError's vtable, and thrown with its
// type_info, all three found with dlsym in the running torch. Catch clauses compare type_info
// by name, so PyTorch's `catch (const c10::OutOfMemoryError&)` takes it, and Python sees
// torch.OutOfMemoryError with our message.
#include "torch_errors.h"

#include "last_error.h"

#include <dlfcn.h>

#include <cxxabi.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <typeinfo>

namespace cudascope::torch_allocator {
namespace {

// c10::SourceLocation (c10/util/StringUtil.h).
struct SourceLocation {
  const char* function;
  const char* file;
  std::uint32_t line;
};
using ErrorConstructor = void (*)(void* self, SourceLocation where, std::string message);

struct TorchOutOfMemory {
  std::type_info* type = nullptr;
  void* vtable = nullptr;  // the address point: the symbol + offset-to-top + type_info slot
  ErrorConstructor construct = nullptr;
};

// Larger than any c10::Error seen (168 bytes with PyTorch 1.x's layout, 128 with 2.x's).
constexpr std::size_t kExceptionBytes = 512;

std::atomic<bool> throw_mode{false};
std::atomic<const TorchOutOfMemory*> out_of_memory{nullptr};
std::once_flag probe_once;

bool bind_from(void* library, std::string& why) {
  auto* type = static_cast<std::type_info*>(dlsym(library, "_ZTIN3c1016OutOfMemoryErrorE"));
  auto* vtable = static_cast<char*>(dlsym(library, "_ZTVN3c1016OutOfMemoryErrorE"));
  void* construct = dlsym(library, "_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE");
  if (construct == nullptr) {
    construct = dlsym(library, "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE");
  }
  if (type == nullptr || vtable == nullptr || construct == nullptr) {
    why = std::string("lacks ") + (type == nullptr     ? "typeinfo for c10::OutOfMemoryError"
                                   : vtable == nullptr ? "vtable for c10::OutOfMemoryError"
                                                       : "c10::Error::Error(c10::SourceLocation, std::string)");
    return false;
  }
  // Bound once for the process; later binds keep the first (the same torch).
  static TorchOutOfMemory bound;
  static std::once_flag set_once;
  std::call_once(set_once, [&] {
    bound.type = type;
    bound.vtable = vtable + 2 * sizeof(void*);
    bound.construct = reinterpret_cast<ErrorConstructor>(construct);
    out_of_memory.store(&bound, std::memory_order_release);
  });
  return true;
}

// The exception's destructor: the virtual one, through the vtable c10 gave it.
void destroy(void* object) { static_cast<std::exception*>(object)->~exception(); }

}  // namespace

bool bind_torch(const char* library_path) {
  throw_mode.store(true);
  const std::string path = library_path == nullptr ? "" : library_path;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) {
    set_last_error("cudascope_torch_bind_torch: " + path + " is not loaded in this process (import torch first)");
    return false;
  }
  std::string why;
  const bool bound = bind_from(library, why);
  dlclose(library);  // drops the reference RTLD_NOLOAD took; torch keeps it loaded
  if (!bound) set_last_error("cudascope_torch_bind_torch: " + path + " " + why);
  return bound;
}

bool torch_present() noexcept {
  std::call_once(probe_once, [] {
    if (throw_mode.load()) return;
    for (const char* soname : {"libc10_cuda.so", "libc10.so"}) {
      if (void* library = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
        throw_mode.store(true);
        std::string why;
        bind_from(library, why);
        dlclose(library);
        if (out_of_memory.load() != nullptr) break;
      }
    }
  });
  return throw_mode.load();
}

void throw_out_of_memory(const std::string& message) {
  const TorchOutOfMemory* t = out_of_memory.load(std::memory_order_acquire);
  if (t == nullptr) throw std::runtime_error(message);
  void* object = abi::__cxa_allocate_exception(kExceptionBytes);
  try {
    t->construct(object, SourceLocation{"cudascope_torch_alloc", __FILE__, static_cast<std::uint32_t>(__LINE__)}, message);
  } catch (...) {
    abi::__cxa_free_exception(object);
    throw;
  }
  *static_cast<void**>(object) = t->vtable;
  abi::__cxa_throw(object, t->type, &destroy);
}

}  // namespace cudascope::torch_allocator
