// A launch-bound loop: N empty kernels back to back, then one synchronize. Prints one JSON
// line: launches, seconds for the loop, peak RSS. "endless" launches until killed (for the
// SIGKILL check), with an NVTX range per 1000 launches.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void tiny_kernel() {}

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cudaError_t e = (call);                                                                    \
    if (e != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));                   \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

int main(int argc, char** argv) {
  const bool endless = argc > 1 && std::strcmp(argv[1], "endless") == 0;
  const long n = argc > 1 && !endless ? std::atol(argv[1]) : 20000;
  for (int i = 0; i < 1000; ++i) tiny_kernel<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  if (endless) {
    for (long i = 0;; ++i) {
      if (i % 1000 == 0) nvtxRangePushA("batch");
      tiny_kernel<<<1, 1>>>();
      if (i % 1000 == 999) {
        CHECK(cudaDeviceSynchronize());
        nvtxRangePop();
      }
    }
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) tiny_kernel<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("{\"launches\":%ld,\"seconds\":%.6f,\"peak_rss_kb\":%ld}\n", n, seconds, usage.ru_maxrss);
  return 0;
}
