// current_blas_handle: the handle pool, per-stream workspaces from the caching allocator,
// CUBLAS_WORKSPACE_CONFIG, and matmul on top (sim in CI; cuda with CUDASCOPE_BACKEND=cuda).
#include "kernel_recorder.h"
#include "test_support.h"

#include "blas/blas_library.h"
#include "blas/sim_blas.h"
#include "tool_loader.h"

#include <cudascope/cuda/blas.h>

#include <mutex>
#include <thread>

namespace cuda = cudascope::cuda;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;

namespace {

TensorOptions on_cuda() { return TensorOptions{}.with_device(Device::cuda(0)); }

// What the sim's handle says it was given (the sim backend only).
const cuda::detail::blas::SimBlasHandle& sim(void* handle) {
  return *static_cast<const cuda::detail::blas::SimBlasHandle*>(handle);
}

// The default torch picks for this device when CUBLAS_WORKSPACE_CONFIG is not set.
std::size_t torch_default_workspace(int device) {
  const int major = cuda::get_device_properties(device).major;
  return major >= 9 && major <= 12 ? 4096u * 8 * 1024 : 4096u * 1024 * 2 + 16 * 1024 * 8;
}

std::vector<double> host_product(const std::vector<double>& a, const std::vector<double>& b, int m, int k, int n) {
  std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

class BlasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda::set_device(0);
    cuda::clear_blas_workspaces();
  }
  void TearDown() override { cuda::clear_blas_workspaces(); }
};

}  // namespace

TEST(BlasWorkspaceConfigTest, ParsesEveryTermAsTorchDoes) {
  EXPECT_EQ(cuda::parse_cublas_workspace_config(":4096:8"), 4096u * 1024 * 8);
  EXPECT_EQ(cuda::parse_cublas_workspace_config(":4096:2:16:8"), 4096u * 1024 * 2 + 16u * 1024 * 8);
  EXPECT_EQ(cuda::parse_cublas_workspace_config(":16:8"), 16u * 1024 * 8);
  EXPECT_EQ(cuda::parse_cublas_workspace_config(":0:0"), 0u);
  EXPECT_EQ(cuda::parse_cublas_workspace_config("4096"), std::nullopt);
  EXPECT_EQ(cuda::parse_cublas_workspace_config(""), std::nullopt);
}

TEST_F(BlasTest, DefaultWorkspaceSizeFollowsTheArchitecture) {
  if (std::getenv("CUBLAS_WORKSPACE_CONFIG") != nullptr) GTEST_SKIP() << "CUBLAS_WORKSPACE_CONFIG is set";
  EXPECT_EQ(cuda::blas_workspace_size(0), torch_default_workspace(0));
}

TEST_F(BlasTest, OneHandlePerThreadSetToTheCurrentStream) {
  void* handle = cuda::current_blas_handle();
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(cuda::current_blas_handle(), handle);
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    EXPECT_EQ(cuda::current_blas_handle(), handle) << "one handle per thread and device, whatever the stream";
    if (!cudascope::testing::on_cuda_backend()) {
      EXPECT_EQ(sim(handle).stream, side.handle());
    }
  }
  cuda::current_blas_handle();
  if (!cudascope::testing::on_cuda_backend()) {
    EXPECT_EQ(sim(handle).stream, cuda::current_stream(0).handle());
    EXPECT_NE(sim(handle).workspace, nullptr);
    EXPECT_EQ(sim(handle).workspace_bytes, cuda::blas_workspace_size(0));
  }
}

TEST_F(BlasTest, EachStreamGetsOneWorkspaceFromTheCachingAllocator) {
  const std::size_t size = cuda::blas_workspace_size(0);
  const auto before = cuda::memory_stats(0);
  cuda::current_blas_handle();
  cuda::current_blas_handle();  // the same pair: no second workspace
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    cuda::current_blas_handle();
  }
  const auto after = cuda::memory_stats(0);
  EXPECT_EQ(after.at("allocation.all.current") - before.at("allocation.all.current"), 2);
  EXPECT_EQ(after.at("requested_bytes.all.current") - before.at("requested_bytes.all.current"),
            2 * static_cast<std::int64_t>(size));
  const cuda::BlasPoolStats stats = cuda::blas_pool_stats(0);
  EXPECT_EQ(stats.workspaces, 2u);
  EXPECT_EQ(stats.workspace_bytes, 2 * size);

  // The side stream's workspace was allocated on the side stream: the snapshot says so.
  int on_side = 0;
  for (const auto& segment : cuda::memory::memory_snapshot().segments) {
    for (const auto& block : segment.blocks) {
      if (block.state == "active_allocated" && block.requested_size == size && segment.stream == side.id()) ++on_side;
    }
  }
  EXPECT_EQ(on_side, 1);

  cuda::clear_blas_workspaces();
  EXPECT_EQ(cuda::memory_stats(0).at("allocation.all.current"), before.at("allocation.all.current"));
  EXPECT_EQ(cuda::blas_pool_stats(0).workspaces, 0u);
}

TEST_F(BlasTest, AGoneStreamsWorkspaceIsReleasedAndTheOthersKept) {
  cuda::current_blas_handle();
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    cuda::current_blas_handle();
  }
  const auto allocations = cuda::memory_stats(0).at("allocation.all.current");
  cuda::clear_blas_workspaces_for_stream(side);
  EXPECT_EQ(cuda::memory_stats(0).at("allocation.all.current"), allocations - 1);
  EXPECT_EQ(cuda::blas_pool_stats(0).workspaces, 1u);
  // Using the stream again allocates again.
  {
    cuda::StreamGuard guard(side);
    cuda::current_blas_handle();
  }
  EXPECT_EQ(cuda::memory_stats(0).at("allocation.all.current"), allocations);
}

TEST_F(BlasTest, AnExitedThreadsHandleIsReusedNotRecreated) {
  cuda::current_blas_handle();  // this thread's own
  void* first = nullptr;
  std::thread([&] { first = cuda::current_blas_handle(); }).join();
  const cuda::BlasPoolStats after_first = cuda::blas_pool_stats(0);
  EXPECT_GE(after_first.handles_available, 1u) << "the exited thread gave its handle back";
  void* second = nullptr;
  std::thread([&] { second = cuda::current_blas_handle(); }).join();
  EXPECT_EQ(second, first);
  EXPECT_EQ(cuda::blas_pool_stats(0).handles_created, after_first.handles_created);
  EXPECT_NE(first, cuda::current_blas_handle()) << "a live thread keeps its own";
}

TEST_F(BlasTest, ConcurrentThreadsHoldDistinctHandles) {
  std::mutex mutex;
  std::vector<void*> handles;
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      void* handle = cuda::current_blas_handle();
      ++arrived;
      while (arrived.load() < 3) std::this_thread::yield();  // all hold one at once
      std::lock_guard lock(mutex);
      handles.push_back(handle);
    });
  }
  for (auto& t : threads) t.join();
  std::sort(handles.begin(), handles.end());
  EXPECT_EQ(std::unique(handles.begin(), handles.end()), handles.end());
}

TEST_F(BlasTest, MatmulMatchesTheHostProduct) {
  cuda::manual_seed(7);
  const Tensor a = cudascope::rand({5, 9}, on_cuda()).narrow(1, 1, 7);  // not contiguous
  const Tensor b = cudascope::rand({7, 3}, on_cuda());
  const Tensor c = cudascope::matmul(a, b);
  ASSERT_EQ(c.sizes(), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(c.device(), Device::cuda(0));
  const auto wanted = host_product(a.to_vector(), b.to_vector(), 5, 7, 3);
  const auto got = c.to_vector();
  ASSERT_EQ(got.size(), wanted.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], wanted[i], 1e-5) << i;
}

TEST_F(BlasTest, MatmulWithAnEmptyInnerDimensionIsZeros) {
  const Tensor c = cudascope::matmul(cudascope::empty({2, 0}, on_cuda()), cudascope::empty({0, 3}, on_cuda()));
  EXPECT_EQ(c.to_vector(), std::vector<double>(6, 0.0));
}

TEST_F(BlasTest, MatmulRejectsWhatItCannotMultiply) {
  const Tensor a = cudascope::ones({2, 3}, on_cuda());
  EXPECT_THROW(cudascope::matmul(a, a), cuda::Error);                                            // 3 != 2
  EXPECT_THROW(cudascope::matmul(a, cudascope::ones({3}, on_cuda())), cuda::Error);             // 1-D
  EXPECT_THROW(cudascope::matmul(a, cudascope::ones({3, 2})), cuda::Error);                     // CPU
  EXPECT_THROW(cudascope::matmul(a, cudascope::ones({3, 2}, TensorOptions{on_cuda()}.with_dtype(cudascope::DType::kInt64))),
               cuda::Error);
}

using cudascope::testing::KernelRecorder;

TEST_F(BlasTest, MatmulIsReportedAsAKernelOnTheCurrentStream) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "on cuda, CUPTI reports cuBLAS's kernels";
  const Tensor a = cudascope::ones({4, 4}, on_cuda());
  cuda::Stream side;
  side.wait_stream(cuda::current_stream(0));
  KernelRecorder recorder;
  cuda::instrumentation::set_observer(&recorder);
  {
    cuda::StreamGuard guard(side);
    const Tensor c = cudascope::matmul(a, a);
    a.record_stream(side);
  }
  cuda::synchronize();
  cuda::instrumentation::set_observer(nullptr);
  EXPECT_THAT(recorder.kernels, ::testing::Contains(std::pair<std::string, std::int64_t>(
                                    "cudascope::blas::sgemm_kernel", side.id())));
}

TEST(BlasLoaderTest, MissingCublasIsAClearError) {
  try {
    cuda::detail::tools::open_cublas({"libcudascope-no-such-cublas.so.99"});
    FAIL() << "loaded a library that does not exist";
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kNotSupported);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("libcudascope-no-such-cublas.so.99"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cuBLAS is not available"));
  }
  const auto candidates = cuda::detail::tools::cublas_candidates();
  EXPECT_EQ(candidates.front(), "libcublas.so.13");
  EXPECT_THAT(candidates, ::testing::Contains("/usr/local/cuda/lib64/libcublas.so.13"));
}

TEST(BlasLoaderTest, CublasLoadsWithEveryEntryPointUsed) {
  // Loading and resolving needs no GPU: where the toolkit's cuBLAS is installed, check that
  // every entry point the cuda backend calls is found by the name used.
  std::unique_ptr<cuda::detail::blas::BlasLibrary> cublas;
  try {
    cublas = cuda::detail::blas::make_cublas_library(cuda::detail::backend());
  } catch (const cuda::Error& e) {
    if (e.code() == cuda::error_code::kNotSupported && std::string(e.what()).find("not available") != std::string::npos) {
      GTEST_SKIP() << "cuBLAS is not installed here: " << e.what();
    }
    throw;
  }
  EXPECT_NE(cublas, nullptr);
}

namespace {
// A child started with CUBLAS_WORKSPACE_CONFIG: prints the workspace it got.
int workspace_config_child(int, char**) {
  cuda::set_device(0);
  const auto before = cuda::memory_stats(0).at("requested_bytes.all.current");
  cuda::current_blas_handle();
  std::printf("workspace=%lld\n", static_cast<long long>(cuda::memory_stats(0).at("requested_bytes.all.current") - before));
  return 0;
}
const cudascope::testing::ChildModeRegistrar workspace_child_mode{"--blas-workspace-child", &workspace_config_child};
}  // namespace

TEST(BlasWorkspaceConfigTest, TheEnvironmentSetsTheWorkspaceAllocated) {
  const auto child = cudascope::testing::run_self({"--blas-workspace-child"}, {"CUBLAS_WORKSPACE_CONFIG=:1024:2:16:4"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("workspace=" + std::to_string(1024 * 1024 * 2 + 16 * 1024 * 4)));
}

TEST(BlasWorkspaceConfigTest, ValuesPast64BitsAreAClearErrorNamingTheVariable) {
  const struct {
    const char* config;
    const char* named;
  } cases[] = {
      {":99999999999999999999999:2", "the number 99999999999999999999999 does not fit"},
      {":18014398509481984:1", "the term :18014398509481984:1 (18014398509481984 KiB x 1) does not fit"},  // 2^64 bytes
      {":1:18014398509481984", "the term :1:18014398509481984"},
      {":9007199254740992:1:9007199254740992:1", "the sum of the terms does not fit"},  // 2^63 + 2^63
  };
  for (const auto& c : cases) {
    try {
      cuda::parse_cublas_workspace_config(c.config);
      ADD_FAILURE() << c.config << " was accepted";
    } catch (const cuda::Error& e) {
      EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
      EXPECT_THAT(e.what(), ::testing::HasSubstr(std::string("CUBLAS_WORKSPACE_CONFIG='") + c.config + "'"));
      EXPECT_THAT(e.what(), ::testing::HasSubstr(c.named));
    }
  }
  // The largest that fits is still a size.
  EXPECT_EQ(cuda::parse_cublas_workspace_config(":9007199254740991:1"), std::size_t{9007199254740991} * 1024);
}

namespace {
// A child started with a CUBLAS_WORKSPACE_CONFIG that cannot be a size: prints the error.
int workspace_error_child(int, char**) {
  cuda::set_device(0);
  try {
    cuda::current_blas_handle();
    std::printf("accepted\n");
  } catch (const cuda::Error& e) {
    std::printf("error=%s\n", e.what());
  }
  return 0;
}
const cudascope::testing::ChildModeRegistrar workspace_error_mode{"--blas-workspace-error-child", &workspace_error_child};
}  // namespace

TEST(BlasWorkspaceConfigTest, AnOverflowingEnvironmentValueIsReportedNotThrownAsOutOfRange) {
  const auto child = cudascope::testing::run_self({"--blas-workspace-error-child"},
                                                  {"CUBLAS_WORKSPACE_CONFIG=:4096:99999999999999999999"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("error="));
  EXPECT_THAT(child.output, ::testing::HasSubstr("CUBLAS_WORKSPACE_CONFIG=':4096:99999999999999999999'"));
}

namespace {
// cuBLAS's create for device 1 while device 0 is current, through whatever backend runs
// (two sim devices in CI, where cuBLAS loads but has no GPU and fails to create): prints
// the current device afterwards.
int create_on_other_device_child(int, char**) {
  cuda::set_device(0);
  std::unique_ptr<cuda::detail::blas::BlasLibrary> cublas;
  try {
    cublas = cuda::detail::blas::make_cublas_library(cuda::detail::backend());
  } catch (const cuda::Error&) {
    std::printf("no-cublas\n");
    return 0;
  }
  try {
    cublas->create(1);
    std::printf("created ");
  } catch (const cuda::Error&) {
    std::printf("failed ");
  }
  std::printf("current_after=%d\n", cuda::current_device());
  return 0;
}
const cudascope::testing::ChildModeRegistrar create_other_mode{"--blas-create-other-device-child",
                                                               &create_on_other_device_child};
}  // namespace

TEST(BlasLoaderTest, CreatingAHandleForAnotherDeviceKeepsTheCurrentDevice) {
  std::vector<std::string> env = {"CUDASCOPE_SIM_DEVICES=2"};
  if (cudascope::testing::on_cuda_backend()) {
    CUDASCOPE_REQUIRE_DEVICES(2);
    env.clear();
  }
  const auto child = cudascope::testing::run_self({"--blas-create-other-device-child"}, env);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  if (child.output.find("no-cublas") != std::string::npos) GTEST_SKIP() << "cuBLAS is not installed here";
  EXPECT_THAT(child.output, ::testing::HasSubstr("current_after=0"));
}
