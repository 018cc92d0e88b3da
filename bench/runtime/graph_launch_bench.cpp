// Launch cost of a 100-kernel CUDA graph replay against the same 100 kernels launched eagerly,
// in the same run: per iteration, the host time to submit the work (one cudaGraphLaunch
// against 100 kernel launches) and the time until the stream has run it. Prints one JSON
// object; bench/runtime/graph_launch_torch.py measures torch's two paths the same way.
//   graph_launch_bench [--iterations N] [--kernels K]
#include <cudascope/cuda.h>
#include <cudascope/cuda/graphs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace cuda = cudascope::cuda;
using Clock = std::chrono::steady_clock;

namespace {

struct Timing {
  double submit_us;  // median host time to queue one iteration
  double total_us;   // wall time per iteration over the whole run, synchronised at the end
};

Timing measure(const std::function<void()>& iteration, int iterations) {
  for (int i = 0; i < 10; ++i) iteration();  // warm-up: caches, lazy loading
  cuda::synchronize();
  std::vector<double> submit;
  submit.reserve(static_cast<std::size_t>(iterations));
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    iteration();
    submit.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  cuda::synchronize();
  const double total = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  std::nth_element(submit.begin(), submit.begin() + static_cast<long>(submit.size() / 2), submit.end());
  return {submit[submit.size() / 2], total / iterations};
}

int flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = flag(argc, argv, "--iterations", 2000);
  const int kernels = flag(argc, argv, "--kernels", 100);
  if (iterations < 1 || kernels < 1) {
    std::fprintf(stderr, "graph_launch_bench: --iterations and --kernels must be positive\n");
    return 2;
  }
  cuda::Stream stream;
  cuda::StreamGuard on(stream);
  cudascope::Tensor x = cudascope::zeros({1024}, cudascope::TensorOptions{}.with_device(cudascope::Device::cuda(0)));
  const auto eager = [&] {
    for (int k = 0; k < kernels; ++k) x.fill_(k);
  };
  cuda::CUDAGraph graph;
  graph.capture_begin();
  eager();
  graph.capture_end();
  const Timing e = measure(eager, iterations);
  const Timing g = measure([&] { graph.replay(); }, iterations);
  std::printf(
      "{\"backend\": \"%s\", \"device\": \"%s\", \"kernels\": %d, \"iterations\": %d, "
      "\"eager_submit_us\": %.2f, \"eager_total_us\": %.2f, \"graph_submit_us\": %.2f, \"graph_total_us\": %.2f, "
      "\"submit_ratio\": %.3f, \"total_ratio\": %.3f}\n",
      cuda::backend_name().c_str(), cuda::get_device_name(0).c_str(), kernels, iterations, e.submit_us, e.total_us,
      g.submit_us, g.total_us, g.submit_us / e.submit_us, g.total_us / e.total_us);
  return 0;
}
