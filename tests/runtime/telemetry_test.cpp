#include "test_support.h"

#include <chrono>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;

TEST(TelemetryTest, ListGpuProcessesFollowsTorchsFormat) {
  const std::string listing = cuda::list_gpu_processes(0);
  EXPECT_EQ(listing.rfind("GPU:0\n", 0), 0u) << listing;
  const auto processes = cuda::gpu_processes(0);
  if (processes.empty()) {
    EXPECT_THAT(listing, ::testing::HasSubstr("no processes are running"));
  } else {
    EXPECT_THAT(listing, ::testing::HasSubstr("MB GPU memory"));
  }
}
