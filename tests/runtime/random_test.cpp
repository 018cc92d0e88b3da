// Per-device Philox generators: state handling, torch's layout of numbers, and the host
// Philox the sim backend uses against the device's (on the GPU machine).
#include "test_support.h"

#include "backend/tensor_kernel.h"
#include "random/philox.h"

#include <cmath>
#include <cstring>

namespace cuda = cudascope::cuda;
namespace philox = cudascope::cuda::detail::philox;
using cudascope::DType;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;

namespace {
TensorOptions on_cuda(DType dtype = DType::kFloat32, int device = 0) {
  return TensorOptions{}.with_dtype(dtype).with_device(Device::cuda(device));
}
std::uint64_t seed_of(const std::vector<std::uint8_t>& state) {
  std::uint64_t seed = 0;
  std::memcpy(&seed, state.data(), 8);
  return seed;
}
std::int64_t offset_of(const std::vector<std::uint8_t>& state) {
  std::int64_t offset = 0;
  std::memcpy(&offset, state.data() + 8, 8);
  return offset;
}
}  // namespace

// Known-answer vectors of Philox-4x32-10 published with Random123 (kat_vectors), which
// cuRAND's generator reproduces.
TEST(PhiloxTest, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox::philox10({0, 0, 0, 0}, {0, 0}),
            (philox::Counter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox::philox10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (philox::Counter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox::philox10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (philox::Counter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(PhiloxTest, SubsequenceAndOffsetPlaceTheCounterAsCurandInit) {
  // curand_init(seed, subsequence, offset): key = seed, counter = (offset / 4, subsequence).
  philox::Stream4 stream(0x0000000100000002ULL, 7, 8);
  EXPECT_EQ(stream.next(), philox::philox10({2, 0, 7, 0}, {2, 1}));
  EXPECT_EQ(stream.next(), philox::philox10({3, 0, 7, 0}, {2, 1}));
  philox::Stream4 carry(1, 0, 0xffffffffULL * 4);
  EXPECT_EQ(carry.next(), philox::philox10({0xffffffffu, 0, 0, 0}, {1, 0}));
  EXPECT_EQ(carry.next(), philox::philox10({0, 1, 0, 0}, {1, 0}));
  EXPECT_EQ(philox::uniform(0), philox::kTwoPow32Inv / 2.0f);
  EXPECT_EQ(philox::uniform(0xffffffffu), 1.0f);  // cuRAND's range is (0, 1]
}

TEST(RandomTest, StateIsSeedThenOffsetAsTorchCuda) {
  cuda::manual_seed(42);
  std::vector<std::uint8_t> state = cuda::get_rng_state();
  ASSERT_EQ(state.size(), 16u);
  EXPECT_EQ(seed_of(state), 42u);
  EXPECT_EQ(offset_of(state), 0);
  EXPECT_EQ(cuda::initial_seed(), 42u);
  // torch's increment: 4 per grid-stride step; one step while the grid covers the tensor.
  cudascope::rand({10}, on_cuda());
  EXPECT_EQ(offset_of(cuda::get_rng_state()), 4);
  const auto props = cuda::get_device_properties(0);
  const std::int64_t per_step = static_cast<std::int64_t>(props.multi_processor_count) *
                                (props.max_threads_per_multi_processor / 256) * 256 * 4;
  cudascope::randn({per_step * 2 + 1}, on_cuda());
  EXPECT_EQ(offset_of(cuda::get_rng_state()), 4 + 12);
}

TEST(RandomTest, SetStateReplaysTheSameNumbers) {
  cuda::manual_seed(7);
  cudascope::rand({100}, on_cuda());
  const std::vector<std::uint8_t> saved = cuda::get_rng_state();
  const Tensor first = cudascope::rand({1000}, on_cuda());
  const Tensor second = cudascope::rand({1000}, on_cuda());
  EXPECT_FALSE(first.equal(second));
  cuda::set_rng_state(saved);
  EXPECT_TRUE(cudascope::rand({1000}, on_cuda()).equal(first));
  cuda::manual_seed(7);
  cudascope::rand({100}, on_cuda());
  EXPECT_TRUE(cudascope::rand({1000}, on_cuda()).equal(first));
  // Eight bytes set the seed with offset 0, as torch accepts.
  cuda::set_rng_state(std::vector<std::uint8_t>(saved.begin(), saved.begin() + 8));
  EXPECT_EQ(cuda::rng::philox_offset(), 0u);
  EXPECT_THROW(cuda::set_rng_state(std::vector<std::uint8_t>(15)), cuda::Error);
  std::vector<std::uint8_t> odd = saved;
  odd[8] = 2;
  EXPECT_THROW(cuda::set_rng_state(odd), cuda::Error);
}

TEST(RandomTest, GeneratorsArePerDevice) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two devices";
  cuda::manual_seed_all(5);
  const auto states = cuda::get_rng_state_all();
  ASSERT_EQ(states.size(), static_cast<std::size_t>(cuda::device_count()));
  EXPECT_EQ(states[0], states[1]);
  cudascope::rand({10}, on_cuda(DType::kFloat32, 1));
  EXPECT_EQ(offset_of(cuda::get_rng_state(1)), 4);
  EXPECT_EQ(offset_of(cuda::get_rng_state(0)), 0);
  // Same seed and offset on both devices: the same numbers (the same device model).
  cuda::manual_seed_all(9);
  EXPECT_TRUE(cudascope::rand({500}, on_cuda(DType::kFloat32, 0)).cpu().equal(cudascope::rand({500}, on_cuda(DType::kFloat32, 1)).cpu()));
  cuda::set_rng_state_all(states);
  EXPECT_EQ(cuda::get_rng_state_all(), states);
  {
    cuda::DeviceGuard on1(1);
    cuda::manual_seed(11);
  }
  EXPECT_EQ(seed_of(cuda::get_rng_state(1)), 11u);
  EXPECT_EQ(seed_of(cuda::get_rng_state(0)), 5u);
}

TEST(RandomTest, SeedDrawsA53BitSeed) {
  const std::uint64_t a = cuda::seed();
  EXPECT_EQ(cuda::initial_seed(), a);
  EXPECT_LT(a, 1ULL << 53);
  const std::uint64_t b = cuda::seed_all();
  EXPECT_NE(a, b);
  for (const auto& state : cuda::get_rng_state_all()) EXPECT_EQ(seed_of(state), b);
}

// While the grid covers the tensor, element i is thread i's first curand_uniform4's x:
// philox(counter (offset / 4, 0, i, 0), key seed) scaled to (0, 1].
TEST(RandomTest, UniformNumbersSitWhereTorchPutsThem) {
  cuda::manual_seed(1234);
  cudascope::rand({3}, on_cuda());  // offset 4
  const std::vector<double> values = cudascope::rand({300}, on_cuda()).to_vector();
  for (std::uint32_t i = 0; i < 300; ++i) {
    const philox::Counter r = philox::philox10({1, 0, i, 0}, {1234, 0});
    const float expected = philox::uniform(r[0]);
    ASSERT_EQ(values[i], expected == 1.0f ? 0.0f : expected) << "element " << i;
  }
  // Beyond the grid: element threads + j sits in thread j's first call's y.
  const auto props = cuda::get_device_properties(0);
  const std::uint32_t threads = static_cast<std::uint32_t>(props.multi_processor_count) *
                                static_cast<std::uint32_t>(props.max_threads_per_multi_processor);
  cuda::manual_seed(99);
  const std::vector<double> big = cudascope::rand({threads + 10}, on_cuda()).to_vector();
  for (std::uint32_t j = 0; j < 10; ++j) {
    const philox::Counter r = philox::philox10({0, 0, j, 0}, {99, 0});
    EXPECT_EQ(big[threads + j], philox::uniform(r[1]));
  }
}

TEST(RandomTest, DistributionsLookRight) {
  cuda::manual_seed(3);
  const std::vector<double> u = cudascope::rand({100000}, on_cuda()).to_vector();
  double sum = 0;
  for (double v : u) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    sum += v;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  const std::vector<double> n = cudascope::randn({100000}, on_cuda()).to_vector();
  double mean = 0, square = 0;
  for (double v : n) {
    mean += v;
    square += v * v;
  }
  mean /= 100000;
  EXPECT_NEAR(mean, 0, 0.02);
  EXPECT_NEAR(std::sqrt(square / 100000 - mean * mean), 1, 0.02);
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    const std::vector<double> h = cudascope::rand({4096}, on_cuda(dtype)).to_vector();
    for (double v : h) ASSERT_LT(v, 1.0);
  }
  EXPECT_THROW(cudascope::rand({4}, TensorOptions{}), cuda::Error);
  EXPECT_THROW(cudascope::rand({4}, on_cuda(DType::kInt32)), cuda::Error);
}

// On the GPU machine: the device's cuRAND kernel against the host Philox the sim backend
// runs. Uniform numbers bit for bit; normals within the __sincosf approximation.
TEST(RandomTest, HostPhiloxEqualsTheDevice) {
  if (!cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "needs the cuda backend (a GPU)";
  for (std::int64_t n : {1, 1000, 1 << 20, 3000000}) {
    for (auto op : {cuda::detail::TensorKernel::Op::kUniform, cuda::detail::TensorKernel::Op::kNormal}) {
      cuda::manual_seed(static_cast<std::uint64_t>(n));
      cudascope::rand({5}, on_cuda());
      const std::uint64_t offset = cuda::rng::philox_offset();
      const Tensor device = op == cuda::detail::TensorKernel::Op::kUniform ? cudascope::rand({n}, on_cuda())
                                                                           : cudascope::randn({n}, on_cuda());
      const std::vector<double> got = device.to_vector();
      Tensor host = cudascope::empty({n}, TensorOptions{});
      const auto props = cuda::get_device_properties(0);
      cuda::detail::TensorKernel k;
      k.op = op;
      k.numel = n;
      k.out = host.data_ptr();
      k.seed = static_cast<std::uint64_t>(n);
      k.offset = offset;
      k.grid = static_cast<std::uint32_t>(std::min<std::int64_t>(
          (n + 255) / 256, props.multi_processor_count * (props.max_threads_per_multi_processor / 256)));
      cuda::detail::run_tensor_kernel_on_host(k);
      const std::vector<double> want = host.to_vector();
      std::int64_t differing = 0;
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i] != want[i]) ++differing;
        worst = std::max(worst, std::abs(got[i] - want[i]));
      }
      if (op == cuda::detail::TensorKernel::Op::kUniform) {
        EXPECT_EQ(differing, 0) << "n=" << n;
      } else {
        EXPECT_LT(worst, 1e-4) << "n=" << n << " differing=" << differing;
      }
    }
  }
}
