// cuBLAS and CUDA IPC on a real GPU (CUDASCOPE_BACKEND=cuda): skipped, with the reason,
// elsewhere. The sim runs the same behaviours in blas_test and ipc_test.
#include "ipc_children.h"

#include <cudascope/cuda/blas.h>
#include <cudascope/cuda/ipc.h>

#include <chrono>

namespace cuda = cudascope::cuda;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;

namespace {
TensorOptions on_gpu() { return TensorOptions{}.with_device(Device::cuda(0)); }
}  // namespace

TEST(GpuBlasTest, HandleIsCublasAndMatmulMatchesTheHost) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::set_device(0);
  void* handle = cuda::current_blas_handle();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(cuda::current_blas_handle(), handle);
  cuda::manual_seed(3);
  const int m = 64, k = 48, n = 33;
  const Tensor a = cudascope::rand({m, k}, on_gpu());
  const Tensor b = cudascope::rand({k, n}, on_gpu());
  const std::vector<double> got = cudascope::matmul(a, b).to_vector();
  const std::vector<double> av = a.to_vector(), bv = b.to_vector();
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double wanted = 0;
      for (int p = 0; p < k; ++p) wanted += av[i * k + p] * bv[p * n + j];
      ASSERT_NEAR(got[i * n + j], wanted, 1e-4) << i << "," << j;  // full float32 math: no TF32
    }
  }
}

TEST(GpuBlasTest, WorkspaceIsAnAllocatorBlockOfTorchsSize) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::set_device(0);
  cuda::clear_blas_workspaces();
  const auto before = cuda::memory_stats(0).at("requested_bytes.all.current");
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    cuda::current_blas_handle();
  }
  const int major = cuda::get_device_properties(0).major;
  const std::size_t wanted = std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr ? cuda::blas_workspace_size(0)
                             : major >= 9 && major <= 12                       ? 4096u * 8 * 1024
                                                                               : 4096u * 1024 * 2 + 16 * 1024 * 8;
  EXPECT_EQ(cuda::memory_stats(0).at("requested_bytes.all.current") - before, static_cast<std::int64_t>(wanted));
  cuda::clear_blas_workspaces();
  EXPECT_EQ(cuda::memory_stats(0).at("requested_bytes.all.current"), before);
}

TEST(GpuIpcTest, AnotherProcessWritesTheSharedTensor) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::set_device(0);
  const Tensor whole = cudascope::arange(3000, on_gpu());
  const Tensor view = whole.narrow(0, 1000, 1000);
  const auto child = cudascope::testing::run_ipc_child("--ipc-write-child", cuda::share_tensor(view));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("sum=1499500.0 same_base=1 open_handles=1"));
  const std::vector<double> values = whole.to_vector();
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(values[static_cast<std::size_t>(i)], i >= 1000 && i < 2000 ? 2.0 * i + 1 : i) << i;
  }
}

TEST(GpuIpcTest, TheBlockWaitsForTheConsumerThenIpcCollectFreesIt) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::set_device(0);
  const auto allocated = cuda::memory_allocated(0);
  Tensor t = cudascope::full({1 << 16}, 3.0, on_gpu());
  const std::int64_t block = cuda::memory_allocated(0) - allocated;
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  t = Tensor();
  EXPECT_EQ(cuda::memory_allocated(0), allocated + block);
  EXPECT_FALSE(cuda::ipc_collect());
  const auto child = cudascope::testing::run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("sum=196608.0"));
  EXPECT_TRUE(cuda::ipc_collect());
  EXPECT_EQ(cuda::memory_allocated(0), allocated);
}

TEST(GpuIpcTest, TheConsumerWaitsForTheProducersQueuedWork) {
  CUDASCOPE_REQUIRE_GPU();
  cuda::set_device(0);
  Tensor t = cudascope::zeros({4096}, on_gpu());
  cuda::busy_wait(std::chrono::milliseconds(500), cuda::current_stream(0));
  t.fill_(5.0);
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  ASSERT_TRUE(handle.event_sync_required);
  const auto child = cudascope::testing::run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("sum=20480.0")) << "the consumer read before the producer's fill";
  double sum = 0;
  for (double v : t.to_vector()) sum += v;
  EXPECT_EQ(sum, 11.0 * 4096);
}
