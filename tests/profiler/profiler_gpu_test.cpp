// The CUPTI source on a real GPU: the same behaviours the sim tests check, as CUPTI reports them.
#include "launch_until_switched.h"
#include "test_support.h"
#include "test_volume.h"

#include <cudascope/cuda/jiterator.h>
#include <cudascope/cuda/tensor.h>
#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/session.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace cudascope;
using namespace cudascope::profiler;

TEST(ProfilerGpuTest, CuptiRecordsTheSpinKernelsWithTheirLaunchesOnOneTimeline) {
  CUDASCOPE_REQUIRE_GPU();
  SessionOptions options;
  options.source = SourceKind::kCupti;
  Session session(options);
  session.start();
  cuda::Stream stream(0);
  for (int i = 0; i < 10; ++i) cuda::busy_wait(std::chrono::microseconds(50), stream);
  stream.synchronize();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  std::map<std::uint32_t, const Record*> launches;
  int kernels = 0;
  for (const Record& r : sink.records()) {
    if (r.kind == RecordKind::kRuntimeApi) launches[r.correlation_id] = &r;
  }
  for (const Record& r : sink.records()) {
    if (r.kind != RecordKind::kKernel) continue;
    ++kernels;
    EXPECT_NE(std::string(r.u.kernel.name).find("cudascope_spin_kernel"), std::string::npos) << r.u.kernel.name;
    EXPECT_GE(r.end_ns - r.start_ns, 50000u);
    ASSERT_TRUE(launches.count(r.correlation_id));
    EXPECT_LE(launches[r.correlation_id]->start_ns, r.start_ns) << "CUPTI's clock is the host's";
    EXPECT_EQ(r.u.kernel.grid[0], 1);
  }
  EXPECT_EQ(kernels, 10);
  EXPECT_EQ(sink.summary().dropped_cupti, 0u);
}

// Counts the kernel records a session hands over while it records, as live metrics read them.
class KernelCountingSink final : public TraceSink {
 public:
  explicit KernelCountingSink(std::atomic<int>& kernels) : kernels_(kernels) {}
  void begin(const TraceInfo&) override {}
  void write(const Record* records, std::size_t count) override {
    for (std::size_t i = 0; i < count; ++i) {
      if (records[i].kind == RecordKind::kKernel) kernels_.fetch_add(1);
    }
  }
  void flush() override {}
  void end(const TraceSummary&) override {}

 private:
  std::atomic<int>& kernels_;
};

// CUPTI's periodic flush returns full buffers only: ten kernels fill none of them, so unless
// the session asks for completed records itself they would reach the sink only at stop().
TEST(ProfilerGpuTest, KernelsReachTheSinkWhileTheSessionRecords) {
  CUDASCOPE_REQUIRE_GPU();
  SessionOptions options;
  options.source = SourceKind::kCupti;
  options.activities = ActivitySet::parse("kernel");
  Session session(options);
  std::atomic<int> kernels{0};
  session.start(std::make_unique<KernelCountingSink>(kernels));
  cuda::Stream stream(0);
  for (int i = 0; i < 10; ++i) cuda::busy_wait(std::chrono::microseconds(50), stream);
  stream.synchronize();
  // A bound on liveness, not a timing: 25 flush intervals.
  const auto deadline = std::chrono::steady_clock::now() + 25 * options.flush_interval;
  while (kernels.load() < 10 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(options.flush_interval / 4);
  }
  const int seen_while_recording = kernels.load();
  session.stop();
  EXPECT_EQ(seen_while_recording, 10);
  EXPECT_EQ(kernels.load(), 10);
}

// Metrics-only sampling as CUPTI does it, under stress: the window's kinds enabled and
// disabled every millisecond while four threads launch and synchronise on streams of their
// own, a fifth compiles and loads new modules (jiterator kernels, as a PyTorch job's first
// steps load cuBLAS's and its own lazily) and allocates, and CUPTI completes buffers. PyTorch
// jobs under such sampling died of SIGSEGV on CUPTI's worker thread on an H100 and an H200
// (why sampling is opt-in, docs/metrics.md); this asks the same of CUPTI in a process of ours:
// it must live, switch as often as asked, and deliver the kernels of its windows.
TEST(ProfilerGpuTest, SampledWindowsSwitchedEveryMillisecondWhileThreadsLaunch) {
  CUDASCOPE_REQUIRE_GPU();
  auto sampling = cudascope::testing::sampling_every_millisecond();
  SessionOptions options;
  options.source = SourceKind::kCupti;
  options.activities = ActivitySet::metrics_only_defaults();
  options.kernel_sampling = sampling;
  Session session(options);
  std::atomic<int> kernels{0};
  session.start(std::make_unique<KernelCountingSink>(kernels));
  // Until 2,000 switches (a second at the plan's pace), or CUDASCOPE_SWITCH_TEST_SWITCHES: a
  // PyTorch job's crash under switching came about once in 10,000 switches, and this tells
  // whether CUPTI dies the same way with no PyTorch in the process. The deadline only bounds
  // a stuck sampler.
  const auto switches_wanted =
      static_cast<std::uint64_t>(cudascope::testing::volume_from_env("CUDASCOPE_SWITCH_TEST_SWITCHES", 2000));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60 + switches_wanted / 200);
  std::vector<std::thread> launchers =
      cudascope::testing::launch_until_switched(*sampling, switches_wanted, deadline, 4, std::chrono::microseconds(10),
                                                8);
  int modules_loaded = 0;
  launchers.emplace_back([&] {
    const Tensor x = ones({1024}, TensorOptions{}.with_device(Device::cuda(0)));
    for (int i = 0; !cudascope::testing::switched_enough(*sampling, switches_wanted, deadline); ++i) {
      const std::string name = "scaled_" + std::to_string(i);
      const auto fn = cuda::jiterator::create_jit_fn(
          "template <typename T> T " + name + "(T x) { return x * T(" + std::to_string(i + 2) + "); }", name);
      EXPECT_EQ(fn({x}).sum().to_vector(), std::vector<double>{1024.0 * (i + 2)});
      ++modules_loaded;
    }
  });
  for (std::thread& t : launchers) t.join();
  session.stop();
  EXPECT_GT(modules_loaded, 0) << "modules were loaded while the kinds switched";
  EXPECT_GE(sampling->switches(), switches_wanted);
  EXPECT_FALSE(sampling->recording_kernels());
  EXPECT_GT(kernels.load(), 0) << "the windows' kernels reached the sink";
  EXPECT_EQ(session.stats().dropped_cupti, 0u);
}
