// CUDA graphs (graphs.h) on the process's backend (sim in CI, cuda with CUDASCOPE_BACKEND=cuda):
// capture and replay, the allocator's private pools and their figures, capture errors, the
// scoped capture, make_graphed_callables and the debug dump.
#include "test_support.h"

#include <cudascope/cuda/graphs.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace cuda = cudascope::cuda;
using cudascope::Device;
using cudascope::DType;
using cudascope::Tensor;
using cudascope::TensorOptions;

namespace {

TensorOptions on_cuda() { return TensorOptions{}.with_dtype(DType::kFloat32).with_device(Device::cuda(0)); }

std::int64_t reserved() { return cuda::memory_stats(0).at("reserved_bytes.all.current"); }

// The segments of device 0 whose pool is `pool` ((0, 0): the device's own).
std::vector<cuda::memory::SegmentInfo> segments_of(cuda::MempoolId pool) {
  std::vector<cuda::memory::SegmentInfo> found;
  for (const auto& s : cuda::memory::memory_snapshot().segments) {
    if (s.device == 0 && static_cast<unsigned long long>(s.segment_pool_id.first) == pool.first &&
        static_cast<unsigned long long>(s.segment_pool_id.second) == pool.second) {
      found.push_back(s);
    }
  }
  return found;
}

int error_code_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const cuda::Error& e) {
    return e.code();
  }
  return 0;
}

class GraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda::synchronize();
    cuda::empty_cache();
  }
  void TearDown() override {
    cuda::synchronize();
    cuda::empty_cache();
  }
};

}  // namespace

TEST_F(GraphsTest, ReplayRecomputesFromTheStaticInputsAsEagerDoes) {
  cuda::Stream side;
  cuda::StreamGuard on_side(side);
  Tensor x = cudascope::full({1024}, 1.0, on_cuda());
  Tensor y = cudascope::arange(1024, on_cuda());
  // Copies' destinations exist before the capture, as static buffers do in torch programs
  // (allocating pinned host memory is not allowed while a stream captures).
  Tensor copied = cudascope::empty({1024}, on_cuda());
  Tensor pinned = cudascope::empty({1024}).pin_memory();
  cuda::CUDAGraph graph;
  graph.capture_begin();
  EXPECT_TRUE(cuda::is_current_stream_capturing());
  Tensor out = x.add(y, 2.0).add(x);
  copied.copy_(out);                         // a device-to-device copy node
  pinned.copy_(out, /*non_blocking=*/true);  // and a device-to-host one
  graph.capture_end();
  EXPECT_FALSE(cuda::is_current_stream_capturing());

  for (double value : {3.0, -1.5, 10.0}) {
    x.fill_(value);
    graph.replay();
    const Tensor eager = x.add(y, 2.0).add(x);
    EXPECT_TRUE(out.equal(eager)) << "after x.fill_(" << value << ")";
    EXPECT_TRUE(copied.equal(eager)) << "after x.fill_(" << value << ")";
    side.synchronize();
    EXPECT_EQ(pinned.to_vector(), eager.to_vector()) << "after x.fill_(" << value << ")";
  }
}

TEST_F(GraphsTest, CaptureOnTheDefaultStreamIsRefused) {
  cuda::CUDAGraph graph;
  EXPECT_NE(error_code_of([&] { graph.capture_begin(); }), 0);
  EXPECT_FALSE(cuda::is_current_stream_capturing());
}

TEST_F(GraphsTest, CaptureAllocatesFromAPrivatePoolHeldUntilReset) {
  cuda::Stream side;
  cuda::StreamGuard on_side(side);
  Tensor x = cudascope::ones({256}, on_cuda());
  const std::int64_t before = reserved();
  auto graph = std::make_unique<cuda::CUDAGraph>();
  graph->capture_begin();
  const cuda::MempoolId pool = graph->pool();
  std::set<void*> captured;
  {
    Tensor temporary = x.add(x);         // freed during the capture: stays in the pool
    captured.insert(temporary.data_ptr());
  }
  Tensor out = x.add(x, 3.0);
  captured.insert(out.data_ptr());
  graph->capture_end();

  EXPECT_NE(pool, (cuda::MempoolId{0, 0}));
  EXPECT_FALSE(segments_of(pool).empty()) << "no segment carries the graph's pool id";
  EXPECT_GT(reserved(), before);

  // Nothing outside the graph is served from the pool, even after the temporary was freed.
  Tensor eager = cudascope::empty({256}, on_cuda());
  EXPECT_EQ(captured.count(eager.data_ptr()), 0U);
  eager = Tensor();

  // Still held after empty_cache while the graph lives, replays keep writing it ...
  cuda::empty_cache();
  EXPECT_FALSE(segments_of(pool).empty());
  graph->replay();
  EXPECT_EQ(out.to_vector(), std::vector<double>(256, 4.0));

  // ... and returned once the graph is reset, its outputs freed and the cache emptied.
  graph->reset();
  out = Tensor();
  cuda::synchronize();
  cuda::empty_cache();
  EXPECT_TRUE(segments_of(pool).empty());
  EXPECT_EQ(reserved(), before);
}

TEST_F(GraphsTest, ASharedPoolLivesUntilEveryGraphUsingItIsReset) {
  cuda::Stream side;
  cuda::StreamGuard on_side(side);
  const cuda::MempoolId pool = cuda::graph_pool_handle();
  EXPECT_EQ(pool.first, 0U);
  EXPECT_NE(pool.second, 0U);
  Tensor x = cudascope::ones({64}, on_cuda());
  cuda::CUDAGraph first;
  cuda::CUDAGraph second;
  Tensor a, b;
  first.capture_begin(pool);
  a = x.add(x);
  first.capture_end();
  second.capture_begin(pool);
  b = a.add(x);
  second.capture_end();
  EXPECT_EQ(first.pool(), pool);
  EXPECT_EQ(second.pool(), pool);

  first.replay();
  second.replay();
  EXPECT_EQ(b.to_vector(), std::vector<double>(64, 3.0));

  first.reset();
  a = Tensor();
  b = Tensor();
  cuda::synchronize();
  cuda::empty_cache();
  EXPECT_FALSE(segments_of(pool).empty()) << "the second graph still uses the pool";
  second.reset();
  cuda::empty_cache();
  EXPECT_TRUE(segments_of(pool).empty());
}

TEST_F(GraphsTest, ASynchronizingCallInvalidatesTheCaptureAndReleasesThePool) {
  cuda::Stream side;
  cuda::StreamGuard on_side(side);
  Tensor x = cudascope::ones({16}, on_cuda());
  cuda::CUDAGraph graph;
  graph.capture_begin();
  const cuda::MempoolId pool = graph.pool();
  Tensor y = x.add(x);
  EXPECT_EQ(error_code_of([&] { side.synchronize(); }), cuda::error_code::kStreamCaptureUnsupported);
  EXPECT_EQ(error_code_of([&] { graph.capture_end(); }), cuda::error_code::kStreamCaptureInvalidated);
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  EXPECT_NE(error_code_of([&] { graph.replay(); }), 0) << "a failed capture has nothing to replay";
  y = Tensor();
  cuda::synchronize();
  cuda::empty_cache();
  EXPECT_TRUE(segments_of(pool).empty());
  // The stream works eagerly again.
  EXPECT_EQ(x.add(x).to_vector(), std::vector<double>(16, 2.0));
}

TEST_F(GraphsTest, ASideStreamForkedAndJoinedIsPartOfTheGraph) {
  cuda::Stream capture_stream;
  cuda::Stream branch;
  cuda::StreamGuard on(capture_stream);
  Tensor x = cudascope::ones({128}, on_cuda());
  cuda::CUDAGraph graph;
  Tensor left, right, out;
  graph.capture_begin();
  branch.wait_stream(capture_stream);  // fork
  {
    cuda::StreamGuard on_branch(branch);
    right = x.add(x, 4.0);
  }
  left = x.add(x);
  capture_stream.wait_stream(branch);  // join
  out = left.add(right);
  graph.capture_end();

  x.fill_(2.0);
  graph.replay();
  EXPECT_EQ(out.to_vector(), std::vector<double>(128, 2.0 + 2.0 + 2.0 + 8.0));
}

TEST_F(GraphsTest, AForkNeverJoinedBackFailsTheCapture) {
  cuda::Stream capture_stream;
  cuda::Stream branch;
  cuda::StreamGuard on(capture_stream);
  Tensor x = cudascope::ones({8}, on_cuda());
  cuda::CUDAGraph graph;
  graph.capture_begin();
  branch.wait_stream(capture_stream);
  Tensor y;
  {
    cuda::StreamGuard on_branch(branch);
    y = x.add(x);
  }
  EXPECT_EQ(error_code_of([&] { graph.capture_end(); }), cuda::error_code::kStreamCaptureUnjoined);
  EXPECT_FALSE(cuda::is_current_stream_capturing());
}

TEST_F(GraphsTest, GraphCaptureUsesASideStreamAndRestoresTheCurrentOne) {
  const cuda::Stream before = cuda::current_stream();
  cuda::CUDAGraph graph;
  Tensor x = cudascope::ones({32}, on_cuda());
  Tensor out;
  {
    cuda::GraphCapture capture(graph);
    EXPECT_TRUE(cuda::is_current_stream_capturing());
    EXPECT_NE(cuda::current_stream().handle(), before.handle());
    out = x.add(x, 5.0);
  }
  EXPECT_EQ(cuda::current_stream().handle(), before.handle());
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  graph.replay();  // on the default stream, as torch allows
  EXPECT_EQ(out.to_vector(), std::vector<double>(32, 6.0));
}

TEST_F(GraphsTest, GraphCaptureLeftByAnExceptionDropsTheCapture) {
  const cuda::Stream before = cuda::current_stream();
  cuda::CUDAGraph graph;
  Tensor x = cudascope::ones({4}, on_cuda());
  EXPECT_THROW(
      {
        cuda::GraphCapture capture(graph);
        Tensor y = x.add(x);
        throw std::runtime_error("user code failed");
      },
      std::runtime_error);
  EXPECT_EQ(cuda::current_stream().handle(), before.handle());
  EXPECT_FALSE(cuda::is_current_stream_capturing());
  EXPECT_NE(error_code_of([&] { graph.replay(); }), 0);
}

TEST_F(GraphsTest, GraphedCallableReplaysOnNewInputs) {
  const cuda::TensorFunction scale_and_sum = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].add(in[1], 0.5), in[0].sum()};
  };
  Tensor a = cudascope::arange(64, on_cuda());
  Tensor b = cudascope::full({64}, 2.0, on_cuda());
  cuda::GraphedCallable graphed = cuda::make_graphed_callable(scale_and_sum, {a, b});
  EXPECT_EQ(graphed.static_inputs().size(), 2U);

  Tensor c = cudascope::full({64}, -3.0, on_cuda());
  Tensor d = cudascope::arange(64, on_cuda());
  const std::vector<Tensor> out = graphed({c, d});
  const std::vector<Tensor> eager = scale_and_sum({c, d});
  ASSERT_EQ(out.size(), 2U);
  EXPECT_TRUE(out[0].equal(eager[0]));
  EXPECT_TRUE(out[1].equal(eager[1]));
  EXPECT_NE(error_code_of([&] { (void)graphed({c}); }), 0) << "a call with too few inputs must be refused";
}

TEST_F(GraphsTest, DebugDumpWritesTheCapturedNodes) {
  cuda::Stream side;
  cuda::StreamGuard on_side(side);
  Tensor x = cudascope::ones({16}, on_cuda());
  cuda::CUDAGraph plain;
  plain.capture_begin();
  Tensor y = x.add(x);
  plain.capture_end();
  EXPECT_NE(error_code_of([&] { plain.debug_dump("/dev/null"); }), 0) << "nothing kept without debug mode";

  cuda::CUDAGraph graph;
  graph.enable_debug_mode();
  graph.capture_begin();
  Tensor z = x.add(x).add(x);
  graph.capture_end();
  EXPECT_GE(graph.num_nodes(), 2U);
  const std::string path = ::testing::TempDir() + "graph_debug.dot";
  graph.debug_dump(path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("digraph"), std::string::npos);
  std::remove(path.c_str());
}

TEST(GraphsApiTest, CaptureErrorModeNamesAreTorchs) {
  EXPECT_EQ(cuda::capture_error_mode("global"), cuda::CaptureErrorMode::kGlobal);
  EXPECT_EQ(cuda::capture_error_mode("thread_local"), cuda::CaptureErrorMode::kThreadLocal);
  EXPECT_EQ(cuda::capture_error_mode("relaxed"), cuda::CaptureErrorMode::kRelaxed);
  EXPECT_THROW(cuda::capture_error_mode("strict"), cuda::Error);
}
