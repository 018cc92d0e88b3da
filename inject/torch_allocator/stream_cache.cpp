#include "stream_cache.h"

#include <cudascope/cuda/device.h>

#include <dlfcn.h>

#include <array>
#include <optional>

namespace cudascope::torch_allocator {
namespace {

struct Slot {
  void* handle = nullptr;
  int device = -1;
  std::optional<cuda::ExternalStream> stream;
};
constexpr std::size_t kSlots = 8;
thread_local std::array<Slot, kSlots> slots;
thread_local std::size_t next_victim = 0;

// The two driver calls, from the libcuda the process has loaded (PyTorch's). Declared here:
// the library builds without the CUDA headers.
struct Driver {
  using StreamGetDevice = int (*)(void* stream, int* device);
  using CtxGetDevice = int (*)(int* device);
  StreamGetDevice stream_get_device = nullptr;
  CtxGetDevice ctx_get_device = nullptr;
};

const Driver& driver() {
  static const Driver loaded = [] {
    Driver d;
    if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      d.stream_get_device = reinterpret_cast<Driver::StreamGetDevice>(dlsym(cuda, "cuStreamGetDevice"));
      d.ctx_get_device = reinterpret_cast<Driver::CtxGetDevice>(dlsym(cuda, "cuCtxGetDevice"));
    }
    return d;
  }();
  return loaded;
}

}  // namespace

cuda::Stream stream_of(void* handle, int device) {
  for (Slot& slot : slots) {
    if (slot.stream && slot.handle == handle && slot.device == device) [[likely]] return *slot.stream;
  }
  Slot& slot = slots[next_victim];
  next_victim = (next_victim + 1) % kSlots;
  slot.stream.reset();
  slot.stream.emplace(handle, device);
  slot.handle = handle;
  slot.device = device;
  return *slot.stream;
}

int device_of_stream(void* handle) {
  const Driver& d = driver();
  int device = -1;
  if (handle != nullptr && d.stream_get_device != nullptr && d.stream_get_device(handle, &device) == 0) return device;
  if (handle == nullptr && d.ctx_get_device != nullptr && d.ctx_get_device(&device) == 0) return device;
  return cuda::current_device();
}

}  // namespace cudascope::torch_allocator
