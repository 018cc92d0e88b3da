// Uses the installed runtime through its umbrella header on the simulated device.
#include <cudascope/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main() {
  setenv("CUDASCOPE_BACKEND", "sim", 1);
  namespace cuda = cudascope::cuda;
  cuda::Stream stream;
  cuda::Event start(true), end(true);
  start.record(stream);
  cuda::busy_wait(std::chrono::milliseconds(5), stream);
  end.record(stream);
  end.synchronize();
  const float ms = start.elapsed_time(end);
  std::printf("cudascope %s: %d devices, kernel took %.1f ms\n", cudascope::kVersion, cuda::device_count(), ms);
  return (cuda::device_count() == 2 && ms >= 4.9f) ? 0 : 1;
}
