#include "device_jit.h"

#include "jit_source.h"
#include "kernel_cache.h"
#include "nvrtc_compiler.h"

#include "../check.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace cudascope::cuda::detail {
namespace {

struct DeviceJitKernel {
  cudaKernel_t kernel = nullptr;
  std::string name;
  int vector_width = 1;
};

void check_cuda(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not resurface at the next launch
  throw_error(static_cast<int>(status), call, __FILE__, __LINE__, cudaGetErrorString(status));
}

// Compute capability as major * 10 + minor, asked once per device (the attribute, not
// cudaGetDeviceProperties, which is slow to call at every launch).
int device_arch(int device) {
  static std::mutex mutex;
  static std::vector<int> archs;
  std::lock_guard lock(mutex);
  if (archs.size() <= static_cast<std::size_t>(device)) archs.resize(static_cast<std::size_t>(device) + 1, 0);
  int& arch = archs[static_cast<std::size_t>(device)];
  if (arch == 0) {
    int major = 0, minor = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
    arch = major * 10 + minor;
  }
  return arch;
}

DeviceJitKernel compile(const JitKernel& kernel, int vector_width, int arch) {
  DeviceJitKernel compiled;
  compiled.name = jit_kernel_name(kernel, vector_width);
  compiled.vector_width = vector_width;
  const DeviceImage image =
      nvrtc_compile(device_jit_source(kernel, vector_width, compiled.name), kernel.program->name + ".cu", arch);
  cudaLibrary_t library = nullptr;
  check_cuda(cudaLibraryLoadData(&library, image.bytes.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
             "cudaLibraryLoadData");
  check_cuda(cudaLibraryGetKernel(&compiled.kernel, library, compiled.name.c_str()), "cudaLibraryGetKernel");
  return compiled;  // the library stays loaded: the cache keeps its kernel for the process
}

const DeviceJitKernel& device_jit_kernel(const JitKernel& kernel, int device) {
  static auto* const cache = new KernelCache<DeviceJitKernel>();  // never destroyed, as host_jit's
  const int width = kernel.contiguous ? jit_vector_width(kernel) : 1;
  const int arch = device_arch(device);
  return cache->get(jit_cache_key(kernel, width, "arch" + std::to_string(arch)),
                    [&] { return compile(kernel, width, arch); });
}

}  // namespace

int jit_vector_width(const JitKernel& kernel) {
  for (int width : {4, 2}) {
    bool aligned = true;
    for (int k = 0; k < kernel.num_operands() && aligned; ++k) {
      const DType dtype = k < kernel.program->num_outputs ? kernel.output
                                                          : kernel.inputs[static_cast<std::size_t>(k - kernel.program->num_outputs)];
      const auto address = reinterpret_cast<std::uintptr_t>(kernel.args.data[k]);
      aligned = address % (static_cast<std::uintptr_t>(width) * element_size(dtype)) == 0;
    }
    if (aligned) return width;
  }
  return 1;
}

void launch_device_jit_kernel(int device, void* stream, const JitKernel& kernel) {
  const DeviceJitKernel& compiled = device_jit_kernel(kernel, device);
  const std::int64_t work = (kernel.args.numel + compiled.vector_width - 1) / compiled.vector_width;
  // Enough blocks to cover the work; past 2^20 the grid-stride loop takes the rest.
  const auto blocks = static_cast<unsigned>(
      std::min<std::int64_t>((work + kJitBlockThreads - 1) / kJitBlockThreads, std::int64_t{1} << 20));
  JitArgs args = kernel.args;
  void* params[] = {&args};
  check_cuda(cudaLaunchKernel(reinterpret_cast<const void*>(compiled.kernel), dim3(blocks), dim3(kJitBlockThreads),
                              params, 0, static_cast<cudaStream_t>(stream)),
             "cudaLaunchKernel");
}

}  // namespace cudascope::cuda::detail
