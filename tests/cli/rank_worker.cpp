// One rank of a data-parallel job, for the multi-rank tests on the sim backend: it uses the
// device LOCAL_RANK names (as torchrun's workers do), runs four "ProfilerStep#N" NVTX ranges,
// each a compute kernel of (1 + 2 * RANK) ms, and lives at least RANK_WORKER_HOLD_MS (default
// 300) so that processes started together overlap. Started under `cudascope run`, it records
// through the injection library the sim backend loads.
#include <cudascope/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {
int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::atoi(text) : fallback;
}
}  // namespace

int main() {
  namespace cuda = cudascope::cuda;
  const auto started = std::chrono::steady_clock::now();
  const int rank = env_int("RANK", 0);
  const int local_rank = env_int("LOCAL_RANK", 0);
  if (local_rank >= cuda::device_count()) {
    std::fprintf(stderr, "rank_worker: LOCAL_RANK=%d but %d devices\n", local_rank, cuda::device_count());
    return 2;
  }
  cuda::set_device(local_rank);
  cuda::Stream compute(local_rank);
  for (int step = 0; step < 4; ++step) {
    cuda::nvtx::Range range("ProfilerStep#" + std::to_string(step));
    cuda::busy_wait(std::chrono::milliseconds(1 + 2 * rank), compute);
    compute.synchronize();
  }
  std::this_thread::sleep_until(started + std::chrono::milliseconds(env_int("RANK_WORKER_HOLD_MS", 300)));
  std::printf("rank %d on device %d done\n", rank, cuda::current_device());
  return 0;
}
