// The stream sanitizer on a GPU: torch.cuda._sanitizer's documented race, with real streams
// and kernels, is caught, and the fixed program is silent (skipped, with the reason, without a
// GPU). Run: CUDASCOPE_BACKEND=cuda <build>/tests/runtime/sanitizer_gpu_test
#include "test_support.h"

#include <cudascope/cuda/sanitizer.h>

#include <chrono>

namespace cuda = cudascope::cuda;
namespace sanitizer = cudascope::cuda::sanitizer;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
using namespace std::chrono_literals;

namespace {

// a = torch.rand(10000) on the default stream, then a = a * 5 on a new stream (here
// a.copy_(a.add(a, 4))). The default stream is kept busy first, so on the GPU the side
// stream's kernels really do run before rand's unless the program synchronises.
std::vector<double> documented_example(bool fixed) {
  cuda::busy_wait(20ms);
  Tensor a = cudascope::rand({10000}, TensorOptions{}.with_device(Device::cuda(0)));
  cuda::Stream side;
  if (fixed) side.wait_stream(cuda::current_stream());
  {
    cuda::StreamGuard guard(side);
    a.copy_(a.add(a, 4.0));
  }
  cuda::synchronize();
  return a.to_vector();
}

}  // namespace

TEST(SanitizerGpuTest, DocumentedRaceIsCaughtAndTheFixedVersionIsSilent) {
  CUDASCOPE_REQUIRE_GPU();
  sanitizer::enable_cuda_sanitizer(sanitizer::OnRace::kPrint);
  documented_example(/*fixed=*/false);
  const auto found = sanitizer::reports();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.front().current.op, "Tensor::add");
  EXPECT_EQ(found.front().previous.op, "cudascope::rand");
  EXPECT_NE(found.front().current.stream, found.front().previous.stream);
  std::printf("%s\n", found.front().message().c_str());

  sanitizer::enable_cuda_sanitizer(sanitizer::OnRace::kThrow);
  const std::vector<double> values = documented_example(/*fixed=*/true);
  EXPECT_EQ(sanitizer::stats().races, 0u);
  EXPECT_GE(sanitizer::stats().kernels, 3u);
  // The fixed program computes 5 * a with a in [0, 1).
  for (double v : values) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 5.0);
  }
  sanitizer::disable_cuda_sanitizer();
}
