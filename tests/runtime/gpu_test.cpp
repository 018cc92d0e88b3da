// Behaviours only a real GPU shows; skipped (with the reason) on other backends.
#include "test_support.h"

#include "arch_list.h"
#include "backend/backend.h"

#include <chrono>

namespace cuda = cudascope::cuda;
using namespace std::chrono_literals;

TEST(GpuTest, DeviceIsARealNvidiaGpu) {
  CUDASCOPE_REQUIRE_GPU();
  const cuda::DeviceProperties props = cuda::get_device_properties(0);
  EXPECT_THAT(props.name, ::testing::HasSubstr("NVIDIA"));
  EXPECT_GE(props.major, 7);
  EXPECT_GT(props.l2_cache_size, 0);
  const auto [free_bytes, total_bytes] = cuda::mem_get_info(0);
  EXPECT_LT(free_bytes, total_bytes) << "a context uses some memory";
}

TEST(GpuTest, BuiltForThisDevicesArchitecture) {
  CUDASCOPE_REQUIRE_GPU();
  const auto [major, minor] = cuda::get_device_capability(0);
  EXPECT_TRUE(cuda::detail::archs_run_on(cuda::get_arch_list(), major, minor))
      << major << "." << minor << " with " << cuda::get_gencode_flags();
}

TEST(GpuTest, KernelTimingIsTight) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::Stream stream;
  cuda::Event start(true), end(true);
  cuda::busy_wait(1ms, stream);  // warm up the launch path
  for (auto length : {1ms, 10ms, 100ms}) {
    start.record(stream);
    cuda::busy_wait(length, stream);
    end.record(stream);
    end.synchronize();
    const double ms = start.elapsed_time(end);
    const double wanted = std::chrono::duration<double, std::milli>(length).count();
    EXPECT_GE(ms, wanted * 0.99) << wanted;
    EXPECT_LT(ms, wanted * 1.10 + 0.05) << wanted;
  }
}

TEST(GpuTest, StreamIdsAreTheDriversIds) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::Stream a, b;
  EXPECT_NE(a.id(), b.id());
  EXPECT_GT(a.id(), 0);
}

TEST(GpuTest, VirtualMemoryMapsAndUnmaps) {
  CUDASCOPE_REQUIRE_GPU();
  auto& backend = cuda::detail::backend();
  const std::size_t granularity = backend.vm_granularity(0);
  ASSERT_GT(granularity, 0u);
  void* base = backend.vm_reserve(0, granularity * 8);
  ASSERT_NE(base, nullptr);
  const auto before = cuda::mem_get_info(0).first;
  ASSERT_TRUE(backend.vm_map(0, base, granularity * 4));
  backend.memset_async(0, base, 0x5a, granularity * 4, nullptr);
  unsigned char probe = 0;
  backend.memcpy_async(0, &probe, static_cast<char*>(base) + granularity * 4 - 1, 1, cuda::detail::CopyKind::kDeviceToHost,
                       nullptr);
  backend.stream_synchronize(0, nullptr);
  EXPECT_EQ(probe, 0x5a);
  EXPECT_LE(cuda::mem_get_info(0).first + granularity * 4, before + granularity) << "mapping used device memory";
  backend.vm_unmap(0, base, granularity * 4);
  backend.vm_release(0, base, granularity * 8);
}

TEST(GpuTest, NvmlFiguresArePlausible) {
  CUDASCOPE_REQUIRE_GPU();
  const int temperature = cuda::temperature(0);
  EXPECT_GT(temperature, 5);
  EXPECT_LT(temperature, 110);
  EXPECT_GT(cuda::power_draw(0), 1000) << "milliwatts: a powered card draws watts (an idle T4 about 9 W)";
  EXPECT_GT(cuda::clock_rate(0), 100);
  EXPECT_GE(cuda::memory_usage(0), 0);
  cuda::Stream stream;
  cuda::busy_wait(1500ms, stream);
  std::this_thread::sleep_for(1200ms);  // NVML samples utilization over the last period
  EXPECT_GT(cuda::utilization(0), 0) << "a kernel ran for the whole period";
  stream.synchronize();
  const cuda::DeviceTelemetry figures = cuda::device_telemetry(0);
  EXPECT_GT(figures.memory_used_bytes, 0u);
  EXPECT_TRUE(figures.energy_millijoules.has_value());
}
