// Runs cudascope's comm collectives on two GPUs for comm_check.py to compare with
// torch.cuda.comm on the same inputs (randn after manual_seed_all, which gives torch's
// numbers), and times broadcast and reduce_add of a large tensor.
//   comm_dump OUT_DIR      writes OUT_DIR/ours_<case>_<i>.bin (float32) and prints timings as JSON
#include <cudascope/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
namespace cuda = cudascope::cuda;

std::string out_dir;

void dump(const std::string& name, const std::vector<Tensor>& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::vector<double> values = tensors[i].to_vector();
    std::vector<float> f(values.begin(), values.end());
    std::ofstream out(out_dir + "/ours_" + name + "_" + std::to_string(i) + ".bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size() * sizeof(float)));
    if (!out) throw std::runtime_error("cannot write " + out_dir);
  }
}

Tensor randn_on(std::vector<std::int64_t> sizes, int device) {
  return cudascope::randn(std::move(sizes), TensorOptions{}.with_device(Device::cuda(device)));
}

// Median seconds of `repeats` runs of fn, each ended by synchronising both devices.
template <typename Fn>
double median_seconds(Fn&& fn, int repeats = 10) {
  std::vector<double> times;
  for (int r = 0; r < repeats + 2; ++r) {
    cuda::synchronize(0), cuda::synchronize(1);
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    cuda::synchronize(0), cuda::synchronize(1);
    if (r >= 2) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf("usage: comm_dump OUT_DIR\n  cudascope::cuda::comm results on devices 0 and 1 for comm_check.py\n");
    return argc == 2 ? 0 : 2;
  }
  out_dir = argv[1];
  if (cuda::device_count() < 2) {
    std::fprintf(stderr, "comm_dump: needs two devices, found %d\n", cuda::device_count());
    return 1;
  }
  cuda::manual_seed_all(1234);
  const Tensor a = randn_on({1024, 513}, 0);
  dump("broadcast", cuda::comm::broadcast(a, {0, 1}));

  std::vector<Tensor> small;
  for (std::int64_t n : {7, 1000, 33, 4096, 5}) small.push_back(randn_on({n, 3}, 0));
  auto coalesced = cuda::comm::broadcast_coalesced(small, {0, 1}, 64 * 1024);
  dump("broadcast_coalesced", coalesced[1]);

  const Tensor b0 = randn_on({300, 301}, 0), b1 = randn_on({300, 301}, 1);
  dump("reduce_add", {cuda::comm::reduce_add({b0, b1}, 0)});

  const Tensor s = randn_on({1000, 37}, 0);
  const auto pieces = cuda::comm::scatter(s, {0, 1}, {300, 700}, 0);
  dump("scatter", pieces);
  const Tensor g0 = randn_on({64, 10}, 0), g1 = randn_on({64, 22}, 1);
  dump("gather", {cuda::comm::gather({g0, g1}, 1, Device::cuda(0))});

  const std::int64_t big = 64ll << 20;  // 256 MB of float32
  const Tensor x0 = randn_on({big}, 0), x1 = randn_on({big}, 1);
  const double t_broadcast = median_seconds([&] { cuda::comm::broadcast(x0, {0, 1}); });
  const double t_reduce = median_seconds([&] { cuda::comm::reduce_add({x0, x1}, 0); });
  std::printf("{\"broadcast_256MB_s\": %.6f, \"reduce_add_256MB_s\": %.6f}\n", t_broadcast, t_reduce);
  return 0;
}
