// cudascope::Tensor on the process's backend (sim in CI, cuda on the GPU machine).
#include "test_support.h"

#include <chrono>
#include <mutex>

namespace cuda = cudascope::cuda;
using cudascope::DType;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
using namespace std::chrono_literals;

namespace {

TensorOptions on_cuda(DType dtype = DType::kFloat32, int device = 0) {
  return TensorOptions{}.with_dtype(dtype).with_device(Device::cuda(device));
}
TensorOptions on_cpu(DType dtype = DType::kFloat32) { return TensorOptions{}.with_dtype(dtype); }

std::vector<double> iota(int n, double start = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(start + i);
  return v;
}

// Restores the sync-debug mode at scope exit.
struct SyncDebugMode {
  explicit SyncDebugMode(int mode) { cuda::set_sync_debug_mode(mode); }
  ~SyncDebugMode() { cuda::set_sync_debug_mode(0); }
};

}  // namespace

TEST(TensorTest, FactoriesFillEveryDtypeOnDeviceAndHost) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32, DType::kUInt8}) {
    for (const TensorOptions& options : {on_cuda(dtype), on_cpu(dtype)}) {
      SCOPED_TRACE(std::string(cudascope::dtype_name(dtype)) + " on " + options.device.str());
      EXPECT_EQ(cudascope::zeros({2, 3}, options).to_vector(), std::vector<double>(6, 0));
      EXPECT_EQ(cudascope::ones({5}, options).to_vector(), std::vector<double>(5, 1));
      EXPECT_EQ(cudascope::full({4}, 7, options).to_vector(), std::vector<double>(4, 7));
      EXPECT_EQ(cudascope::arange(10, options).to_vector(), iota(10));
      EXPECT_EQ(cudascope::arange(3, 9, 2, options).to_vector(), (std::vector<double>{3, 5, 7}));
    }
  }
  EXPECT_EQ(cudascope::full({3}, 1, on_cuda(DType::kBool)).to_vector(), std::vector<double>(3, 1));
  // float16 and bfloat16 round as the device does.
  EXPECT_EQ(cudascope::full({1}, 0.1, on_cuda(DType::kFloat16)).to_vector()[0], 0.0999755859375);
  EXPECT_EQ(cudascope::full({1}, 0.1, on_cuda(DType::kBFloat16)).to_vector()[0], 0.10009765625);
  EXPECT_EQ(cudascope::full({1}, 65520, on_cuda(DType::kFloat16)).to_vector()[0], INFINITY);
}

TEST(TensorTest, ShapeStridesAndDevice) {
  Tensor t = cudascope::empty({2, 3, 4}, on_cuda());
  EXPECT_EQ(t.sizes(), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(t.strides(), (std::vector<std::int64_t>{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_cuda());
  EXPECT_EQ(t.device(), Device::cuda(0));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.narrow(2, 1, 2).is_contiguous());
  EXPECT_EQ(cudascope::empty({}, on_cpu()).numel(), 1);
  EXPECT_EQ(cudascope::empty({0, 5}, on_cuda()).data_ptr(), nullptr);
  EXPECT_THROW(t.size(3), cuda::Error);
  EXPECT_THROW(cudascope::empty({-1}, on_cpu()), cuda::Error);
}

TEST(TensorTest, DeviceMemoryComesFromTheCachingAllocator) {
  const std::int64_t before = cuda::memory_allocated(0);
  {
    Tensor t = cudascope::empty({1000}, on_cuda());
    EXPECT_EQ(cuda::memory_allocated(0), before + 4096);  // 4000 bytes in 512-byte rounding
  }
  EXPECT_EQ(cuda::memory_allocated(0), before);
}

TEST(TensorTest, CopiesRoundTripBetweenHostAndDevice) {
  Tensor host = cudascope::arange(1000, on_cpu());
  Tensor device = host.cuda();
  EXPECT_TRUE(device.is_cuda());
  EXPECT_EQ(device.cpu().to_vector(), iota(1000));
  Tensor pinned = host.pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_FALSE(host.is_pinned());
  EXPECT_TRUE(pinned.cuda(0, /*non_blocking=*/true).equal(host));
}

TEST(TensorTest, BlockingCopyWaitsForTheStream) {
  Tensor device = cudascope::arange(256, on_cuda());
  cuda::busy_wait(100ms);
  Tensor host = device.cpu();
  EXPECT_TRUE(cuda::current_stream().query());
  EXPECT_EQ(host.to_vector(), iota(256));
}

TEST(TensorTest, NonBlockingCopyToPinnedMemoryIsAsynchronous) {
  Tensor device = cudascope::arange(256, on_cuda());
  Tensor pinned = cudascope::zeros({256}, on_cpu().pinned());
  cuda::busy_wait(200ms);
  const auto start = std::chrono::steady_clock::now();
  pinned.copy_(device, /*non_blocking=*/true);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 150ms);
  EXPECT_FALSE(cuda::current_stream().query());
  cuda::current_stream().synchronize();
  EXPECT_EQ(pinned.to_vector(), iota(256));
}

TEST(TensorTest, NonBlockingToCpuLandsInPinnedMemory) {
  Tensor device = cudascope::arange(64, on_cuda());
  Tensor host = device.to(Device::cpu(), /*non_blocking=*/true);
  EXPECT_TRUE(host.is_pinned());
  cuda::current_stream().synchronize();
  EXPECT_EQ(host.to_vector(), iota(64));
}

TEST(TensorTest, NonBlockingCopyFromPageableMemoryIsSynchronousForTheHost) {
  Tensor device = cudascope::arange(256, on_cuda());
  Tensor pageable = cudascope::zeros({256}, on_cpu());
  cuda::busy_wait(100ms);
  pageable.copy_(device, /*non_blocking=*/true);
  EXPECT_EQ(pageable.to_vector(), iota(256));  // read with no synchronize
}

TEST(TensorTest, SyncDebugModeSeesBlockingCopiesOnly) {
  Tensor device = cudascope::arange(16, on_cuda());
  Tensor pinned = cudascope::empty({16}, on_cpu().pinned());
  SyncDebugMode error(2);
  EXPECT_THROW(device.cpu(), cuda::Error);
  EXPECT_NO_THROW(pinned.copy_(device, /*non_blocking=*/true));
  cuda::set_sync_debug_mode(0);
  cuda::current_stream().synchronize();
  EXPECT_EQ(pinned.to_vector(), iota(16));
}

TEST(TensorTest, PinnedBlockIsNotReusedWhileACopyMayReadIt) {
  Tensor device = cudascope::empty({1 << 16}, on_cuda());
  void* first = nullptr;
  {
    Tensor staging = cudascope::ones({1 << 16}, on_cpu().pinned());
    first = staging.data_ptr();
    cuda::busy_wait(200ms);
    device.copy_(staging, /*non_blocking=*/true);
  }
  Tensor again = cudascope::empty({1 << 16}, on_cpu().pinned());
  EXPECT_NE(again.data_ptr(), first);
  cuda::current_stream().synchronize();
  Tensor third = cudascope::empty({1 << 16}, on_cpu().pinned());
  EXPECT_EQ(third.data_ptr(), first);
  EXPECT_EQ(device.sum().cpu().item(), 65536);
}

TEST(TensorTest, AddSumAndFill) {
  Tensor a = cudascope::arange(100, on_cuda());
  Tensor b = cudascope::full({100}, 2, on_cuda());
  EXPECT_EQ(a.add(b, 0.5).cpu().to_vector(), iota(100, 1));
  EXPECT_EQ(a.sum().cpu().item(), 4950);
  Tensor ints = cudascope::arange(10, on_cuda(DType::kInt32));
  Tensor total = ints.sum();
  EXPECT_EQ(total.dtype(), DType::kInt64);
  EXPECT_EQ(total.cpu().item(), 45);
  EXPECT_EQ(ints.add(ints, 3).cpu().to_vector()[9], 36);
  EXPECT_EQ(cudascope::arange(10, on_cpu()).sum().item(), 45);
  Tensor h = cudascope::arange(8, on_cuda(DType::kFloat16)).fill_(0.5);
  EXPECT_EQ(h.sum().cpu().item(), 4);
  EXPECT_THROW(a.add(ints), cuda::Error);
}

TEST(TensorTest, CatAndChunkAlongEachDim) {
  for (const TensorOptions& options : {on_cuda(), on_cpu()}) {
    SCOPED_TRACE(options.device.str());
    Tensor m = cudascope::arange(12, options).view({3, 4});
    std::vector<Tensor> rows = m.chunk(2, 0);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].sizes(), (std::vector<std::int64_t>{2, 4}));
    EXPECT_EQ(rows[1].to_vector(), (std::vector<double>{8, 9, 10, 11}));
    std::vector<Tensor> cols = m.chunk(3, 1);
    ASSERT_EQ(cols.size(), 2u);  // ceil(4 / 3) = 2 columns each
    EXPECT_FALSE(cols[1].is_contiguous());
    EXPECT_EQ(cols[1].contiguous().to_vector(), (std::vector<double>{2, 3, 6, 7, 10, 11}));
    EXPECT_TRUE(cudascope::cat(cols, 1).equal(m));
    EXPECT_TRUE(cudascope::cat(rows, 0).equal(m));
    Tensor wide = cudascope::cat({m, m}, 1);
    EXPECT_EQ(wide.sizes(), (std::vector<std::int64_t>{3, 8}));
    EXPECT_EQ(wide.to_vector()[4], 0);
    EXPECT_EQ(wide.to_vector()[8], 4);
  }
  EXPECT_THROW(cudascope::cat({cudascope::zeros({2}, on_cuda()), cudascope::zeros({2}, on_cpu())}), cuda::Error);
}

TEST(TensorTest, CopiesIntoAndOutOfStridedViews) {
  Tensor m = cudascope::zeros({3, 4}, on_cuda());
  m.narrow(1, 1, 2).copy_(cudascope::ones({3, 2}, on_cpu()));
  EXPECT_EQ(m.cpu().to_vector(), (std::vector<double>{0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0}));
  Tensor host = cudascope::zeros({3, 4}, on_cpu());
  host.narrow(1, 0, 2).copy_(cudascope::arange(6, on_cuda()).view({3, 2}));
  EXPECT_EQ(host.to_vector(), (std::vector<double>{0, 1, 0, 0, 2, 3, 0, 0, 4, 5, 0, 0}));
  m.narrow(0, 1, 1).fill_(9);
  EXPECT_EQ(m.cpu().to_vector()[5], 9);
}

TEST(TensorTest, CopiesBetweenDevices) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two devices (sim has two by default)";
  Tensor a = cudascope::arange(1000, on_cuda(DType::kFloat32, 0));
  Tensor b = a.to(Device::cuda(1));
  EXPECT_EQ(b.device(), Device::cuda(1));
  EXPECT_EQ(b.cpu().to_vector(), iota(1000));
  Tensor strided = cudascope::zeros({10, 200}, on_cuda(DType::kFloat32, 1));
  strided.narrow(1, 0, 100).copy_(a.view({10, 100}));
  EXPECT_EQ(strided.cpu().to_vector()[200], 100);
  {
    cuda::DeviceGuard on1(1);
    EXPECT_EQ(cudascope::empty({1}, on_cuda(DType::kFloat32, -1)).device(), Device::cuda(1));
  }
}

TEST(TensorTest, DeviceOfMakesTheTensorsDeviceCurrent) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two devices";
  Tensor on1 = cudascope::zeros({1}, on_cuda(DType::kFloat32, 1));
  EXPECT_EQ(cuda::current_device(), 0);
  {
    auto guard = cuda::device_of(on1);
    EXPECT_EQ(cuda::current_device(), 1);
  }
  EXPECT_EQ(cuda::current_device(), 0);
  {
    auto guard = cuda::device_of(cudascope::zeros({1}, on_cpu()));
    EXPECT_EQ(cuda::current_device(), 0);
  }
}

TEST(TensorTest, RecordStreamKeepsDeviceMemoryUntilTheStreamIsDone) {
  cuda::Stream side;
  void* first = nullptr;
  {
    Tensor t = cudascope::empty({1 << 20}, on_cuda());
    first = t.data_ptr();
    cuda::busy_wait(200ms, side);
    t.record_stream(side);
  }
  Tensor next = cudascope::empty({1 << 20}, on_cuda());
  EXPECT_NE(next.data_ptr(), first);
  side.synchronize();
  EXPECT_THROW(cudascope::zeros({1}, on_cpu()).record_stream(side), cuda::Error);
}

TEST(TensorTest, CopyRejectsMismatches) {
  Tensor f = cudascope::zeros({4}, on_cuda());
  EXPECT_THROW(f.copy_(cudascope::zeros({4}, on_cuda(DType::kInt32))), cuda::Error);
  EXPECT_THROW(f.copy_(cudascope::zeros({5}, on_cuda())), cuda::Error);
  EXPECT_THROW(cudascope::zeros({2}, on_cuda()).pin_memory(), cuda::Error);
  EXPECT_THROW(f.item(), cuda::Error);
}

namespace {
// Collects what the sim backend reports about copies and kernels.
class Recorder : public cuda::instrumentation::Observer {
 public:
  void on_allocator_event(const cuda::instrumentation::AllocatorEvent& e) override {
    std::lock_guard lock(mutex);
    if (e.device == -1) host_events.push_back(e.action);
  }
  void on_copy(const cuda::instrumentation::CopyActivity& c) override {
    std::lock_guard lock(mutex);
    copies.push_back(c.kind);
  }
  void on_kernel(const cuda::instrumentation::KernelActivity& k) override {
    std::lock_guard lock(mutex);
    kernels.emplace_back(k.name);
  }
  std::mutex mutex;
  std::vector<cuda::instrumentation::CopyKind> copies;
  std::vector<std::string> kernels;
  std::vector<cuda::instrumentation::AllocatorEvent::Action> host_events;
};
}  // namespace

TEST(TensorTest, CopiesKernelsAndPinnedBlocksAreReportedOnSim) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "on cuda, CUPTI reports device activity";
  Recorder recorder;
  cuda::instrumentation::set_observer(&recorder);
  {
    Tensor t = cudascope::arange(8, on_cuda());
    Tensor pinned = cudascope::empty({8}, on_cpu().pinned());
    pinned.copy_(t.add(t));
  }
  cuda::synchronize();
  cuda::instrumentation::set_observer(nullptr);
  using K = cuda::instrumentation::CopyKind;
  EXPECT_THAT(recorder.copies, ::testing::ElementsAre(K::kDeviceToHost));
  EXPECT_THAT(recorder.kernels, ::testing::ElementsAre("cudascope::tensor::arange_kernel", "cudascope::tensor::add_kernel"));
  using A = cuda::instrumentation::AllocatorEvent::Action;
  ASSERT_FALSE(recorder.host_events.empty());
  EXPECT_EQ(recorder.host_events.back(), A::kFree);
}
