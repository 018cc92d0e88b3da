// torch.cuda.comm on the process's devices (two sim devices in CI).
#include "test_support.h"

namespace cuda = cudascope::cuda;
namespace comm = cudascope::cuda::comm;
using cudascope::DType;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;

namespace {
TensorOptions on_cuda(int device, DType dtype = DType::kFloat32) {
  return TensorOptions{}.with_dtype(dtype).with_device(Device::cuda(device));
}
class CommTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() < 2) GTEST_SKIP() << "needs two devices (sim has two by default)";
  }
};
}  // namespace

TEST_F(CommTest, BroadcastCopiesToEachDevice) {
  const Tensor source = cudascope::arange(100, on_cuda(0));
  const std::vector<Tensor> copies = comm::broadcast(source, {0, 1});
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].data_ptr(), source.data_ptr());  // already there
  EXPECT_EQ(copies[1].device(), Device::cuda(1));
  EXPECT_TRUE(copies[1].equal(source));
}

TEST_F(CommTest, BroadcastCoalescedSplitsBucketsAndRestoresShapes) {
  const Tensor a = cudascope::arange(6, on_cuda(0)).view({2, 3});
  const Tensor b = cudascope::full({5}, 3, on_cuda(0));
  const Tensor c = cudascope::arange(4, on_cuda(0, DType::kInt64));
  // 16 bytes: a (24 bytes) and b (20) each get their own bucket; c another (other dtype).
  const auto out = comm::broadcast_coalesced({a, b, c}, {1, 0}, 16);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& per_device : out) {
    ASSERT_EQ(per_device.size(), 3u);
    EXPECT_TRUE(per_device[0].equal(a));
    EXPECT_TRUE(per_device[1].equal(b));
    EXPECT_TRUE(per_device[2].equal(c));
  }
  EXPECT_EQ(out[0][0].device(), Device::cuda(1));
  EXPECT_EQ(out[0][0].sizes(), (std::vector<std::int64_t>{2, 3}));
  const auto packed = comm::broadcast_coalesced({a, b}, {1});  // one bucket
  EXPECT_EQ(packed[0][0].storage(), packed[0][1].storage());
  EXPECT_TRUE(packed[0][1].equal(b));
}

TEST_F(CommTest, ReduceAddSumsOnTheDestination) {
  const Tensor x = cudascope::arange(10, on_cuda(0));
  const Tensor y = cudascope::full({10}, 5, on_cuda(1));
  const Tensor sum = comm::reduce_add({x, y}, 1);
  EXPECT_EQ(sum.device(), Device::cuda(1));
  EXPECT_EQ(sum.cpu().to_vector()[9], 14);
  const Tensor one = comm::reduce_add({x}, 0);
  EXPECT_NE(one.data_ptr(), x.data_ptr());
  EXPECT_TRUE(one.equal(x));
  EXPECT_THROW(comm::reduce_add({x, cudascope::zeros({3}, on_cuda(1))}), cuda::Error);
}

TEST_F(CommTest, ScatterAndGatherRoundTrip) {
  const Tensor m = cudascope::arange(24, on_cuda(0)).view({4, 6});
  const std::vector<Tensor> rows = comm::scatter(m, {0, 1});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].device(), Device::cuda(1));
  EXPECT_EQ(rows[1].sizes(), (std::vector<std::int64_t>{2, 6}));
  EXPECT_TRUE(comm::gather(rows, 0, Device::cuda(0)).equal(m));
  const std::vector<Tensor> cols = comm::scatter(m, {1, 0}, {2, 4}, 1, {cuda::Stream(1), cuda::Stream(0)});
  EXPECT_EQ(cols[0].sizes(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(cols[0].device(), Device::cuda(1));
  cuda::synchronize(0);
  cuda::synchronize(1);
  const Tensor back = comm::gather(cols, 1, Device::cpu());
  EXPECT_FALSE(back.is_cuda());
  EXPECT_TRUE(back.equal(m));
  EXPECT_THROW(comm::scatter(m, {0, 1}, {1, 2}), cuda::Error);
}
