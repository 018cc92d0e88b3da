// The allocation pattern of graph_pool_check.py through cudascope's CUDA graphs: prints
// memory_stats() of device 0 at each stage as one JSON object, for comparison with PyTorch's.
#include <cudascope/cuda.h>
#include <cudascope/cuda/graphs.h>

#include <cstdio>
#include <map>
#include <string>

namespace cuda = cudascope::cuda;
using cudascope::Tensor;

namespace {
Tensor bytes(std::int64_t n) {
  return cudascope::empty({n}, cudascope::TensorOptions{}.with_dtype(cudascope::DType::kUInt8).with_device(
                                   cudascope::Device::cuda(0)));
}

void print_stage(const char* name, bool last) {
  std::printf("\"%s\": {", name);
  bool first = true;
  for (const auto& [key, value] : cuda::memory_stats(0)) {
    std::printf("%s\"%s\": %lld", first ? "" : ", ", key.c_str(), static_cast<long long>(value));
    first = false;
  }
  std::printf("}%s\n", last ? "" : ",");
}
}  // namespace

int main() {
  constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB;
  Tensor input = bytes(1 * MiB);
  std::printf("{\n");
  print_stage("before_capture", false);
  cuda::CUDAGraph graph;
  Tensor a, d, e, out;
  {
    cuda::GraphCapture capture(graph);
    a = bytes(3 * MiB);
    Tensor b = bytes(512 * KiB);
    Tensor c = bytes(25 * MiB);
    a.fill_(1);
    b = Tensor();
    d = bytes(256 * KiB);
    e = bytes(24 * MiB);
    c = Tensor();
    out = bytes(4 * MiB);
    out.fill_(2);
  }
  print_stage("after_capture", false);
  graph.replay();
  cuda::synchronize();
  print_stage("after_replay", false);
  // In the order Python's `del a, d, e, out` frees them: the order decides which free blocks merge.
  a = Tensor();
  d = Tensor();
  e = Tensor();
  out = Tensor();
  print_stage("outputs_dropped", false);
  graph.reset();
  cuda::empty_cache();
  print_stage("after_reset_and_empty_cache", true);
  std::printf("}\n");
  return 0;
}
