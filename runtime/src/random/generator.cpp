// Per-device Philox generators (torch's CUDAGeneratorImpl) and the rand/randn factories.
#include "../tensor/sanitizer_access.h"
#include "../tensor/storage.h"
#include "../tensor/tensor_kernels.h"

#include "../check.h"
#include "graph_registration.h"
#include "../runtime_state.h"

#include <cudascope/cuda/random.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>

namespace cudascope::cuda {
namespace {

struct Generator {
  std::mutex mutex;
  std::uint64_t seed = kDefaultRngSeed;
  std::uint64_t offset = 0;  // torch's philox_offset_per_thread
  // CUDA graphs registered with this generator, and torch's seed_extragraph_ /
  // offset_extragraph_ while any is (graph_registration.h).
  std::set<const void*> graphs;
  Tensor seed_extragraph;
  Tensor offset_extragraph;
};

struct Generators {
  std::vector<std::unique_ptr<Generator>> devices;
};

Generators& generators() {
  static Generators* const all = [] {
    auto* g = new Generators();
    const int count = detail::lazy_backend().device_count();
    for (int i = 0; i < count; ++i) g->devices.push_back(std::make_unique<Generator>());
    return g;
  }();
  return *all;
}

Generator& generator(int device) {
  const int index = detail::resolve_device(device);
  return *generators().devices[static_cast<std::size_t>(index)];
}

// c10::detail::getNonDeterministicRandom(is_cuda=true): two 32-bit draws, kept to 53 bits so
// the seed survives a round trip through a double.
std::uint64_t non_deterministic_seed() {
  std::random_device device;
  const std::uint64_t high = device();
  return ((high << 32) + device()) & 0x1FFFFFFFFFFFFFULL;
}

void reseed(Generator& g, std::uint64_t seed) {
  std::lock_guard lock(g.mutex);
  g.seed = seed;
  g.offset = 0;
}

}  // namespace

void manual_seed(std::uint64_t seed) { reseed(generator(-1), seed); }

void manual_seed_all(std::uint64_t seed) {
  for (auto& g : generators().devices) reseed(*g, seed);
}

std::uint64_t seed() {
  const std::uint64_t value = non_deterministic_seed();
  manual_seed(value);
  return value;
}

std::uint64_t seed_all() {
  const std::uint64_t value = non_deterministic_seed();
  manual_seed_all(value);
  return value;
}

std::uint64_t initial_seed() {
  Generator& g = generator(-1);
  std::lock_guard lock(g.mutex);
  return g.seed;
}

std::vector<std::uint8_t> get_rng_state(int device) {
  Generator& g = generator(device);
  std::lock_guard lock(g.mutex);
  std::vector<std::uint8_t> state(16);
  const auto offset = static_cast<std::int64_t>(g.offset);
  std::memcpy(state.data(), &g.seed, 8);
  std::memcpy(state.data() + 8, &offset, 8);
  return state;
}

std::vector<std::vector<std::uint8_t>> get_rng_state_all() {
  std::vector<std::vector<std::uint8_t>> states;
  for (std::size_t i = 0; i < generators().devices.size(); ++i) states.push_back(get_rng_state(static_cast<int>(i)));
  return states;
}

void set_rng_state(const std::vector<std::uint8_t>& state, int device) {
  CUDASCOPE_CHECK(state.size() == 16 || state.size() == 8, error_code::kInvalidValue, "set_rng_state",
                  "RNG state is wrong size: " + std::to_string(state.size()) + " bytes (expected 16: seed, offset)");
  std::uint64_t seed = 0;
  std::int64_t offset = 0;
  std::memcpy(&seed, state.data(), 8);
  if (state.size() == 16) std::memcpy(&offset, state.data() + 8, 8);
  CUDASCOPE_CHECK(offset >= 0 && offset % 4 == 0, error_code::kInvalidValue, "set_rng_state",
                  "offset " + std::to_string(offset) + " must be a non-negative multiple of 4");
  Generator& g = generator(device);
  std::lock_guard lock(g.mutex);
  g.seed = seed;
  g.offset = static_cast<std::uint64_t>(offset);
}

void set_rng_state_all(const std::vector<std::vector<std::uint8_t>>& states) {
  for (std::size_t i = 0; i < states.size(); ++i) set_rng_state(states[i], static_cast<int>(i));
}

namespace detail::random {
void register_graph(int device, const void* graph) {
  Generator& g = generator(device);
  std::lock_guard lock(g.mutex);
  if (g.graphs.empty()) {
    const TensorOptions on_device = TensorOptions{}.with_dtype(DType::kInt64).with_device(Device::cuda(device));
    g.seed_extragraph = empty({1}, on_device);
    g.offset_extragraph = empty({1}, on_device);
  }
  g.graphs.insert(graph);
}

void unregister_graph(int device, const void* graph) {
  Generator& g = generator(device);
  std::lock_guard lock(g.mutex);
  if (g.graphs.erase(graph) == 0 || !g.graphs.empty()) return;
  g.seed_extragraph = Tensor();
  g.offset_extragraph = Tensor();
}
}  // namespace detail::random

namespace rng {
std::uint64_t philox_offset(int device) {
  Generator& g = generator(device);
  std::lock_guard lock(g.mutex);
  return g.offset;
}
}  // namespace rng

namespace {

struct LaunchShape {
  int multi_processor_count = 0;
  int max_threads_per_multi_processor = 0;
};

LaunchShape launch_shape(int device) {
  static std::mutex mutex;
  static std::vector<LaunchShape> shapes;
  std::lock_guard lock(mutex);
  if (shapes.size() <= static_cast<std::size_t>(device)) shapes.resize(static_cast<std::size_t>(device) + 1);
  LaunchShape& shape = shapes[static_cast<std::size_t>(device)];
  if (shape.multi_processor_count == 0) {
    const DeviceProperties props = detail::lazy_backend().properties(device);
    shape = {props.multi_processor_count, props.max_threads_per_multi_processor};
  }
  return shape;
}

// torch's uniform_ / normal_ on CUDA for float, half and bfloat16: calc_execution_policy's
// grid (256-thread blocks, at most SMs x (threads per SM / 256) of them) and Philox offset
// increment (4 per grid-stride step of four elements per thread), taken from the generator
// under its lock. The numbers depend on this launch shape, so it is mirrored exactly. Not
// mirrored: torch splits tensors over 2^31 elements into several launches.
Tensor draw(std::vector<std::int64_t> sizes, TensorOptions options, detail::TensorKernel::Op op, const char* call) {
  CUDASCOPE_CHECK(options.device.is_cuda(), error_code::kInvalidValue, call,
                  std::string(call) + " generates on CUDA devices only (torch's CPU generator is not provided)");
  CUDASCOPE_CHECK(is_floating_point(options.dtype), error_code::kInvalidValue, call,
                  std::string(call) + " needs a floating dtype, not " + dtype_name(options.dtype));
  Tensor out = empty(std::move(sizes), options);
  const std::int64_t n = out.numel();
  if (n == 0) return out;
  const int device = out.device().index;
  const LaunchShape shape = launch_shape(device);
  const std::uint64_t blocks = (static_cast<std::uint64_t>(n) + detail::kRngBlock - 1) / detail::kRngBlock;
  const std::uint64_t blocks_per_sm = static_cast<std::uint64_t>(shape.max_threads_per_multi_processor) / detail::kRngBlock;
  const auto grid = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(static_cast<std::uint64_t>(shape.multi_processor_count) * blocks_per_sm, blocks));
  const std::uint64_t increment = ((static_cast<std::uint64_t>(n) - 1) / (detail::kRngBlock * grid * 4ULL) + 1) * 4;
  detail::TensorKernel k;
  k.op = op;
  k.dtype = options.dtype;
  k.numel = n;
  k.out = out.data_ptr();
  k.grid = grid;
  Generator& g = generator(device);
  {
    std::lock_guard lock(g.mutex);
    k.seed = g.seed;
    k.offset = g.offset;
    g.offset += increment;
  }
  cudascope::detail::declare_accesses(call, out.device(), {}, {{&out, nullptr}});
  cudascope::detail::run_kernel(out.device(), k);
  return out;
}

}  // namespace
}  // namespace cudascope::cuda

namespace cudascope {

Tensor rand(std::vector<std::int64_t> sizes, TensorOptions options) {
  return cuda::draw(std::move(sizes), options, cuda::detail::TensorKernel::Op::kUniform, "cudascope::rand");
}

Tensor randn(std::vector<std::int64_t> sizes, TensorOptions options) {
  return cuda::draw(std::move(sizes), options, cuda::detail::TensorKernel::Op::kNormal, "cudascope::randn");
}

}  // namespace cudascope
