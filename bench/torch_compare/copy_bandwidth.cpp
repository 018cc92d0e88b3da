// Host<->device copy bandwidth of cudascope::Tensor copies, for copy_check.py to compare with
// torch's in the same run.
//   copy_bandwidth [--bytes N]... [--iters K]
// Prints one JSON line per case: {"lib":"cudascope","dir":"h2d|d2h","mem":"pinned|pageable",
// "bytes":N,"gbps":G}. Each case: K copies with non_blocking = (mem == pinned), then one
// synchronize, timed on the host after a warm-up copy (the idiom a training loop uses).
#include <cudascope/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<long long> sizes;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: copy_bandwidth [--bytes N]... [--iters K]\n"
                  "  times host<->device Tensor copies (pinned non_blocking, pageable blocking)\n");
      return 0;
    }
    if (std::strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) sizes.push_back(std::stoll(argv[++i]));
    else if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) iters = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "copy_bandwidth: unknown argument '%s' (see --help)\n", argv[i]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1LL << 20, 64LL << 20, 256LL << 20};
  using cudascope::Device;
  using cudascope::TensorOptions;
  for (long long bytes : sizes) {
    const std::int64_t n = bytes / 4;
    cudascope::Tensor device = cudascope::zeros({n}, TensorOptions{}.with_device(Device::cuda(0)));
    for (const bool pinned : {true, false}) {
      cudascope::Tensor host = cudascope::ones({n}, TensorOptions{}.pinned(pinned));
      for (const bool h2d : {true, false}) {
        cudascope::Tensor& dst = h2d ? device : host;
        const cudascope::Tensor& src = h2d ? host : device;
        dst.copy_(src, pinned);
        cudascope::cuda::synchronize();
        const auto start = std::chrono::steady_clock::now();
        for (int k = 0; k < iters; ++k) dst.copy_(src, pinned);
        cudascope::cuda::synchronize();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("{\"lib\":\"cudascope\",\"dir\":\"%s\",\"mem\":\"%s\",\"bytes\":%lld,\"gbps\":%.3f}\n",
                    h2d ? "h2d" : "d2h", pinned ? "pinned" : "pageable", bytes,
                    static_cast<double>(bytes) * iters / seconds / 1e9);
      }
    }
  }
  return 0;
}
