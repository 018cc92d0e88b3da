// Prints cudascope's random numbers for rng_check.py to compare with torch's.
//   rng_dump OUT_DIR CASE...      CASE = SEED:N:DIST:DTYPE  (DIST rand|randn, DTYPE float32|float16|bfloat16)
// For each case: manual_seed(SEED), two draws of N numbers, each written as float32 to
// OUT_DIR/ours_SEED_N_DIST_DTYPE_{0,1}.bin, and the RNG state after them to ..._state.bin.
#include <cudascope/cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

void write(const std::string& path, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error("cannot write " + path);
}

cudascope::DType parse_dtype(const std::string& name) {
  if (name == "float32") return cudascope::DType::kFloat32;
  if (name == "float16") return cudascope::DType::kFloat16;
  if (name == "bfloat16") return cudascope::DType::kBFloat16;
  throw std::runtime_error("unknown dtype '" + name + "' (float32, float16, bfloat16)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
    std::printf("usage: rng_dump OUT_DIR SEED:N:DIST:DTYPE...\n"
                "  writes cudascope's rand/randn numbers after manual_seed(SEED) (two draws each, as float32)\n"
                "  and the RNG state after them, for bench/torch_compare/rng_check.py\n");
    return argc < 3 ? 2 : 0;
  }
  const std::string dir = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::stringstream spec(argv[i]);
    std::string seed, n, dist, dtype;
    std::getline(spec, seed, ':');
    std::getline(spec, n, ':');
    std::getline(spec, dist, ':');
    std::getline(spec, dtype, ':');
    const auto options =
        cudascope::TensorOptions{}.with_dtype(parse_dtype(dtype)).with_device(cudascope::Device::cuda(0));
    cudascope::cuda::manual_seed(std::stoull(seed));
    const std::string stem = dir + "/ours_" + seed + "_" + n + "_" + dist + "_" + dtype;
    for (int draw = 0; draw < 2; ++draw) {
      const cudascope::Tensor t = dist == "rand" ? cudascope::rand({std::stoll(n)}, options)
                                                 : cudascope::randn({std::stoll(n)}, options);
      const std::vector<double> values = t.to_vector();
      const std::vector<float> as_float(values.begin(), values.end());
      write(stem + "_" + std::to_string(draw) + ".bin", as_float.data(), as_float.size() * sizeof(float));
    }
    const std::vector<std::uint8_t> state = cudascope::cuda::get_rng_state();
    write(stem + "_state.bin", state.data(), state.size());
  }
  std::printf("rng_dump: %d cases on %s (%s)\n", argc - 2, cudascope::cuda::get_device_name(0).c_str(),
              cudascope::cuda::backend_name().c_str());
  return 0;
}
