// The device state on a real GPU: a fork after counting devices, and the current device
// changed by the program's own CUDA runtime (not the runtime's statically linked one), as a
// PyTorch process or any CUDA program does. Skipped, with the reason, without a GPU.
#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#ifdef CUDASCOPE_TEST_HAVE_CUDART
#include <cuda_runtime_api.h>
#endif

namespace cuda = cudascope::cuda;

namespace {

// Child, in a fresh process: counting creates no context, so a child forked afterwards
// allocates and runs a kernel. Exit codes name what failed.
int fork_after_count_child(int, char**) {
  if (!cuda::is_available() || cuda::device_count() < 1) return 2;
  if (cuda::is_initialized()) return 3;
  const pid_t pid = fork();
  if (pid < 0) return 4;
  if (pid == 0) {
    try {
      void* p = cuda::caching_allocator_alloc(1 << 20);
      cuda::busy_wait(std::chrono::milliseconds(1));
      cuda::synchronize();
      cuda::caching_allocator_delete(p);
      _exit(0);
    } catch (const std::exception& e) {
      std::printf("forked child: %s\n", e.what());
      std::fflush(stdout);
      _exit(5);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return 6;
  return WEXITSTATUS(status) == 0 ? 0 : 10 + WEXITSTATUS(status);
}
const cudascope::testing::ChildModeRegistrar fork_after_count_mode{"--fork-after-count-child", &fork_after_count_child};

}  // namespace

TEST(GpuDeviceStateTest, ChildForkedAfterCountingDevicesAllocates) {
  CUDASCOPE_REQUIRE_GPU();
  const auto r = cudascope::testing::run_self({"--fork-after-count-child"});
  EXPECT_EQ(r.exit_code, 0) << "2: no device, 3: counting initialised the runtime, 15: the forked child could "
                               "not allocate or launch\n"
                            << r.output;
}

TEST(GpuDeviceStateTest, RawCudaSetDeviceOfTheProgramIsSeen) {
  CUDASCOPE_REQUIRE_GPU();
  CUDASCOPE_REQUIRE_DEVICES(2);
#ifndef CUDASCOPE_TEST_HAVE_CUDART
  GTEST_SKIP() << "built without the CUDA runtime to call cudaSetDevice with";
#else
  cuda::init();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);  // the program's libcudart, not the runtime's
  EXPECT_EQ(cuda::current_device(), 1);
  EXPECT_EQ(cuda::Stream().device_index(), 1);
  const std::int64_t before = cuda::memory_allocated(1);
  void* p = cuda::caching_allocator_alloc(1 << 20);
  EXPECT_EQ(cuda::memory_allocated(1) - before, 1 << 20);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, p), cudaSuccess);
  EXPECT_EQ(attributes.device, 1);
  cuda::caching_allocator_delete(p);
  {
    cuda::DeviceGuard guard(0);
    int seen = -1;
    ASSERT_EQ(cudaGetDevice(&seen), cudaSuccess);
    EXPECT_EQ(seen, 0);
  }
  int restored = -1;
  ASSERT_EQ(cudaGetDevice(&restored), cudaSuccess);
  EXPECT_EQ(restored, 1) << "the guard restored a stale device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  EXPECT_EQ(cuda::current_device(), 0);
#endif
}
