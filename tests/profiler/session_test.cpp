// Sessions on the sim backend: the runtime reports device activity itself, so the whole
// path (observer -> record buffers -> writer thread -> sink) runs without a GPU.
#include "launch_until_switched.h"
#include "test_support.h"

#include <cudascope/cuda/graphs.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/profiler/session.h>

#include "backend/backend.h"
#include "runtime_state.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <thread>
#include <vector>

using namespace cudascope;
using namespace cudascope::profiler;

namespace {

std::vector<Record> of_kind(const std::vector<Record>& records, RecordKind kind) {
  std::vector<Record> out;
  for (const Record& r : records) {
    if (r.kind == kind) out.push_back(r);
  }
  return out;
}

SessionOptions sim_options() {
  SessionOptions options;
  options.source = SourceKind::kSim;
  options.flush_interval = std::chrono::milliseconds(20);
  return options;
}

}  // namespace

TEST(SessionTest, KernelsCopiesFillsAndSyncsOnSimAreRecordedWithLaunchCorrelation) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  SessionOptions options = sim_options();
  options.activities = ActivitySet::defaults().add(Activity::kSync);  // `--activities default,sync`
  Session session(options);
  session.start();
  cuda::Stream stream(0);
  cuda::busy_wait(std::chrono::microseconds(200), stream);
  cuda::busy_wait(std::chrono::microseconds(100), stream);
  std::vector<char> host(4096, 1);
  void* device = cuda::caching_allocator_alloc(4096, 0, stream);
  cuda::detail::lazy_backend().memcpy_async(0, device, host.data(), host.size(), cuda::detail::CopyKind::kHostToDevice,
                                            stream.handle());
  cuda::detail::lazy_backend().memset_async(0, device, 0, 4096, stream.handle());
  stream.synchronize();
  cuda::caching_allocator_delete(device);
  session.stop();

  MemorySink sink;
  session.export_to(sink);
  const auto kernels = of_kind(sink.records(), RecordKind::kKernel);
  const auto calls = of_kind(sink.records(), RecordKind::kRuntimeApi);
  ASSERT_EQ(kernels.size(), 2u);
  std::map<std::uint32_t, Record> by_correlation;
  for (const Record& call : calls) by_correlation[call.correlation_id] = call;
  for (const Record& kernel : kernels) {
    EXPECT_EQ(kernel.stream, stream.id());
    EXPECT_EQ(kernel.device, 0);
    ASSERT_TRUE(by_correlation.count(kernel.correlation_id)) << "the launch call of every kernel is recorded";
    const Record& call = by_correlation[kernel.correlation_id];
    EXPECT_STREQ(call.u.api.name, "cudaLaunchKernel");
    EXPECT_LE(call.start_ns, kernel.start_ns) << "one timeline: the launch starts before its kernel";
  }
  EXPECT_GE(kernels[0].end_ns - kernels[0].start_ns, 200000u);
  EXPECT_LE(kernels[0].end_ns, kernels[1].start_ns) << "stream order";
  const auto copies = of_kind(sink.records(), RecordKind::kMemcpy);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].u.copy.bytes, 4096u);
  EXPECT_EQ(static_cast<CopyKindCode>(copies[0].detail), CopyKindCode::kHtoD);
  ASSERT_EQ(of_kind(sink.records(), RecordKind::kMemset).size(), 1u);
  const auto syncs = of_kind(sink.records(), RecordKind::kSync);
  ASSERT_FALSE(syncs.empty());
  EXPECT_EQ(static_cast<SyncType>(syncs[0].detail), SyncType::kStream);
  const auto allocations = of_kind(sink.records(), RecordKind::kAllocator);
  ASSERT_FALSE(allocations.empty()) << "the caching allocator reports through the same observer";
  EXPECT_GE(allocations.back().u.allocator.reserved_bytes, 4096);
  EXPECT_EQ(sink.summary().dropped_buffer, 0u);
  EXPECT_EQ(sink.info().source, "sim");
}

TEST(SessionTest, DefaultsLeaveOutSynchronisationRecords) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  Session session(sim_options());
  session.start();
  cuda::Stream stream(0);
  cuda::busy_wait(std::chrono::microseconds(100), stream);
  stream.synchronize();
  session.stop();

  MemorySink sink;
  session.export_to(sink);
  EXPECT_EQ(of_kind(sink.records(), RecordKind::kKernel).size(), 1u);
  EXPECT_TRUE(of_kind(sink.records(), RecordKind::kSync).empty())
      << "a default trace records no synchronisations, as torch.profiler's CUDA activity records none";
}

TEST(SessionTest, AGraphReplaysKernelsCarryTheLaunchsCorrelationAndTheGraphsId) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  cuda::Stream stream(0);
  cuda::StreamGuard on(stream);
  cuda::CUDAGraph graph;
  graph.capture_begin();
  cuda::busy_wait(std::chrono::microseconds(50), stream);
  cuda::busy_wait(std::chrono::microseconds(50), stream);
  graph.capture_end();
  Session session(sim_options());
  session.start();
  graph.replay();
  graph.replay();
  stream.synchronize();
  session.stop();

  MemorySink sink;
  session.export_to(sink);
  std::map<std::uint32_t, std::string> call_names;
  for (const Record& call : of_kind(sink.records(), RecordKind::kRuntimeApi)) call_names[call.correlation_id] = call.u.api.name;
  const auto kernels = of_kind(sink.records(), RecordKind::kKernel);
  ASSERT_EQ(kernels.size(), 4u) << "two replays of a two-kernel graph";
  std::map<std::uint32_t, int> kernels_per_launch;
  for (const Record& kernel : kernels) {
    EXPECT_NE(kernel.u.kernel.graph_id, 0u) << "a graph's kernel names its graph";
    EXPECT_EQ(kernel.u.kernel.graph_id, kernels[0].u.kernel.graph_id);
    ASSERT_TRUE(call_names.count(kernel.correlation_id)) << "each kernel leads back to a recorded call";
    EXPECT_EQ(call_names[kernel.correlation_id], "cudaGraphLaunch");
    kernels_per_launch[kernel.correlation_id]++;
  }
  EXPECT_EQ(kernels_per_launch.size(), 2u);
  for (const auto& [correlation, count] : kernels_per_launch) EXPECT_EQ(count, 2) << correlation;

  // Outside a replay the kernels are the program's own again.
  Session eager(sim_options());
  eager.start();
  cuda::busy_wait(std::chrono::microseconds(10), stream);
  stream.synchronize();
  eager.stop();
  MemorySink eager_sink;
  eager.export_to(eager_sink);
  const auto eager_kernels = of_kind(eager_sink.records(), RecordKind::kKernel);
  ASSERT_EQ(eager_kernels.size(), 1u);
  EXPECT_EQ(eager_kernels[0].u.kernel.graph_id, 0u);
}

TEST(SessionTest, AllocationsDuringACaptureNameTheGraphsPool) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  Session session(sim_options());
  session.start();
  cuda::Stream stream(0);
  cuda::StreamGuard on(stream);
  void* before = cuda::caching_allocator_alloc(4096, 0, stream);
  cuda::CUDAGraph graph;
  graph.capture_begin();
  void* during = cuda::caching_allocator_alloc(4096, 0, stream);
  graph.capture_end();
  session.stop();
  cuda::caching_allocator_delete(during);
  cuda::caching_allocator_delete(before);

  MemorySink sink;
  session.export_to(sink);
  const cuda::MempoolId pool = graph.pool();
  bool own = false, in_pool = false;
  for (const Record& r : of_kind(sink.records(), RecordKind::kAllocator)) {
    if (static_cast<AllocatorAction>(r.detail) != AllocatorAction::kAlloc) continue;
    const auto& p = r.u.allocator.graph_pool;
    if (r.u.allocator.address == reinterpret_cast<std::uint64_t>(before)) own = p[0] == 0 && p[1] == 0;
    if (r.u.allocator.address == reinterpret_cast<std::uint64_t>(during)) in_pool = p[0] == pool.first && p[1] == pool.second;
  }
  EXPECT_TRUE(own) << "an allocation outside the capture names no pool";
  EXPECT_TRUE(in_pool) << "the capture's allocation names the graph's pool";
}

TEST(SessionTest, AllocatorActionsArriveInTheProfilersVocabulary) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  cuda::empty_cache();  // nothing cached: the allocation below needs a new segment
  Session session(sim_options());
  session.start();
  void* block = cuda::caching_allocator_alloc(3 << 20, 0);
  cuda::caching_allocator_delete(block);
  cuda::empty_cache();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  std::vector<AllocatorAction> actions;
  for (const Record& r : of_kind(sink.records(), RecordKind::kAllocator)) {
    actions.push_back(static_cast<AllocatorAction>(r.detail));
    EXPECT_EQ(r.device, 0);
  }
  EXPECT_EQ(actions, (std::vector<AllocatorAction>{AllocatorAction::kSegmentAlloc, AllocatorAction::kAlloc,
                                                   AllocatorAction::kFree, AllocatorAction::kSegmentFree}))
      << "segment_alloc, alloc, free, segment_free, as the allocator did them";
}

TEST(SessionTest, DeviceMemoryRecordsAgreeWithTheAllocatorsReservedBytes) {
  // Two independent accounts of the same memory: the sim's cudaMalloc/cudaFree (what CUPTI's
  // memory records give on a GPU, for any allocator) and the caching allocator's own figures.
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  cuda::empty_cache();
  Session session(sim_options());
  session.start();
  std::vector<void*> blocks;
  for (std::size_t bytes : {std::size_t{3} << 20, std::size_t{100} << 10, std::size_t{30} << 20})
    blocks.push_back(cuda::caching_allocator_alloc(bytes, 0));
  for (void* block : blocks) cuda::caching_allocator_delete(block);
  cuda::empty_cache();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  const auto held = of_kind(sink.records(), RecordKind::kDeviceMemory);
  std::vector<std::int64_t> reserved_after_segment_changes;
  for (const Record& r : of_kind(sink.records(), RecordKind::kAllocator)) {
    const auto action = static_cast<AllocatorAction>(r.detail);
    if (action == AllocatorAction::kSegmentAlloc || action == AllocatorAction::kSegmentFree)
      reserved_after_segment_changes.push_back(r.u.allocator.reserved_bytes);
  }
  ASSERT_EQ(held.size(), 6u) << "three segments obtained and returned";
  ASSERT_EQ(held.size(), reserved_after_segment_changes.size());
  for (std::size_t i = 0; i < held.size(); ++i) {
    EXPECT_EQ(static_cast<std::int64_t>(held[i].u.device_memory.held_bytes), reserved_after_segment_changes[i]) << i;
    EXPECT_EQ(held[i].detail, i < 3 ? 0 : 1) << i;
    EXPECT_EQ(held[i].device, 0);
  }
  EXPECT_EQ(held.back().u.device_memory.held_bytes, 0u) << "empty_cache returned everything";
}

TEST(SessionTest, StreamOrderedAllocationsAreHeldUntilTheirFreeRuns) {
  // cudaMallocAsync / cudaFreeAsync, as the cudaMallocAsync allocator backend and other
  // libraries call them: held from the allocation, returned when the stream reaches the free.
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  auto& backend = cuda::detail::lazy_backend();
  cuda::Stream stream(0);
  Session session(sim_options());
  session.start();
  void* ptr = backend.malloc_async(0, 1 << 20, stream.handle());
  cuda::busy_wait(std::chrono::microseconds(200), stream);
  backend.free_async(0, ptr, stream.handle());
  stream.synchronize();
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  const auto held = of_kind(sink.records(), RecordKind::kDeviceMemory);
  const auto kernels = of_kind(sink.records(), RecordKind::kKernel);
  ASSERT_EQ(held.size(), 2u);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(held[0].u.device_memory.held_bytes, 1u << 20);
  EXPECT_EQ(held[1].u.device_memory.held_bytes, 0u);
  EXPECT_GE(held[1].start_ns, kernels[0].end_ns) << "returned once the work queued before the free is done";
}

TEST(SessionTest, NvtxRangesOfTheRuntimeAreRecordedPerThreadWithTheirText) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  Session session(sim_options());
  session.start();
  const std::string long_name(150, 'x');
  {
    cuda::nvtx::Range outer("outer");
    cuda::nvtx::Range inner(long_name);
    cuda::nvtx::mark("checkpoint");
  }
  session.stop();
  MemorySink sink;
  session.export_to(sink);
  std::vector<std::string> texts;
  std::vector<RecordKind> kinds;
  const auto& records = sink.records();
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.kind == RecordKind::kNvtxPush || r.kind == RecordKind::kNvtxMark) {
      texts.push_back(record_text(r, records.data() + i + 1, records.size() - i - 1));
    }
    if (r.kind >= RecordKind::kNvtxPush && r.kind <= RecordKind::kNvtxMark) kinds.push_back(r.kind);
  }
  EXPECT_EQ(texts, (std::vector<std::string>{"outer", long_name, "checkpoint"}));
  EXPECT_EQ(kinds, (std::vector<RecordKind>{RecordKind::kNvtxPush, RecordKind::kNvtxPush, RecordKind::kNvtxMark,
                                            RecordKind::kNvtxPop, RecordKind::kNvtxPop}));
}

TEST(SessionTest, OnlyTheSelectedActivitiesAreRecordedAndNothingAfterStop) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  SessionOptions options = sim_options();
  options.activities = ActivitySet::parse("kernel");
  Session session(options);
  session.start();
  cuda::Stream stream(0);
  {
    cuda::nvtx::Range range("not recorded");
    cuda::busy_wait(std::chrono::microseconds(10), stream);
  }
  stream.synchronize();
  session.stop();
  cuda::busy_wait(std::chrono::microseconds(10), stream);
  stream.synchronize();
  MemorySink sink;
  session.export_to(sink);
  std::map<RecordKind, int> counts;
  for (const Record& r : sink.records()) ++counts[r.kind];
  EXPECT_EQ(counts[RecordKind::kKernel], 1);
  EXPECT_EQ(counts[RecordKind::kRuntimeApi], 0);
  EXPECT_EQ(counts[RecordKind::kNvtxPush], 0);
  EXPECT_EQ(counts[RecordKind::kSync], 0);
}

TEST(SessionTest, ASecondConcurrentSessionIsRefusedAndExportNeedsAStoppedInMemorySession) {
  Session first(sim_options());
  first.start();
  Session second(sim_options());
  EXPECT_THROW(second.start(), std::logic_error);
  EXPECT_THROW(first.export_to(*std::make_unique<MemorySink>()), std::logic_error);
  first.stop();
  EXPECT_EQ(Session::current(), nullptr);
  second.start();
  EXPECT_EQ(Session::current(), &second);
  second.stop();
}

// A metrics-only recording samples kernels (kernel_sampling.h); while a trace window asks for
// every kernel, the sampler keeps kernel records on and each counts once.
TEST(SessionTest, ASampledSessionRecordsEveryKernelWhileFullRecordingIsRequested) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  auto sampling = std::make_shared<KernelSampling>(SamplingPlan{});
  sampling->request_full(true);
  SessionOptions options = sim_options();
  options.kernel_sampling = sampling;
  Session session(options);
  session.start();
  // The sampler's thread switches kernel records on as it starts.
  for (int i = 0; i < 5000 && !sampling->recording_kernels(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(sampling->recording_kernels());
  cuda::Stream stream(0);
  for (int i = 0; i < 3; ++i) cuda::busy_wait(std::chrono::microseconds(50), stream);
  stream.synchronize();
  sampling->request_full(false);
  session.stop();
  EXPECT_FALSE(sampling->recording_kernels()) << "kernel records end with the session";

  MemorySink sink;
  session.export_to(sink);
  const auto kernels = of_kind(sink.records(), RecordKind::kKernel);
  ASSERT_EQ(kernels.size(), 3u);
  for (const Record& k : kernels) EXPECT_EQ(sampling->weight_at(k.start_ns), 1u);
  EXPECT_GT(sampling->sampled_ratio(), 0.0);
}

// Kernel records switched on and off every millisecond while three threads launch and
// synchronise, and another reads the segments and asks for, then gives up, full recording
// (a trace window), as a metrics server and its scrapes do: the session ends cleanly, kernel
// records off, and every kernel recorded carries a weight of one of its segments. (A sampled
// job died of SIGSEGV once on a GPU; run under TSan by .ci/sanitizers.sh, this looks for a
// race on the parts the sim and CUPTI sources share.)
TEST(SessionTest, SamplingSwitchedEveryMillisecondWhileThreadsLaunchAndReadEndsCleanly) {
  CUDASCOPE_REQUIRE_SIM_BACKEND();
  auto sampling = cudascope::testing::sampling_every_millisecond();
  SessionOptions options = sim_options();
  options.kernel_sampling = sampling;
  Session session(options);
  session.start();
  std::atomic<bool> launching{true};
  std::thread reader([&] {
    for (int i = 0; launching.load(); ++i) {
      const auto segments = sampling->segments();
      EXPECT_LE(segments.size(), KernelSampling::kKeptSegments);
      if (!segments.empty()) {
        EXPECT_GE(sampling->weight_at(segments.back().open_ns), 1u);
      }
      EXPECT_LE(sampling->sampled_ratio(), 1.0);
      if (i % 50 == 0) sampling->request_full(true);
      if (i % 50 == 25) sampling->request_full(false);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (sampling->full_requested()) sampling->request_full(false);
  });
  // Until the sampler has switched 40 times (20 windows), however slowly a loaded machine runs it.
  constexpr std::uint64_t kSwitches = 40;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::thread> launchers =
      cudascope::testing::launch_until_switched(*sampling, kSwitches, deadline, 3, std::chrono::microseconds(20), 10);
  for (std::thread& t : launchers) t.join();
  launching.store(false);
  reader.join();
  session.stop();
  EXPECT_FALSE(sampling->recording_kernels()) << "kernel records end with the session";
  EXPECT_GE(sampling->switches(), kSwitches) << "the windows opened and closed while the threads ran";

  MemorySink sink;
  session.export_to(sink);
  const auto kernels = of_kind(sink.records(), RecordKind::kKernel);
  EXPECT_FALSE(kernels.empty()) << "some kernels fell in a window";
  for (const Record& k : kernels) {
    const std::uint64_t weight = sampling->weight_at(k.start_ns);
    EXPECT_TRUE(weight == 1 || weight == sampling->plan().weight()) << weight;
  }
}

TEST(SessionTest, EachSlotOfASamplingPeriodIsDrawnAlike) {
  SamplingPlan plan;  // 50 ms in every 1 s: 20 slots
  ASSERT_EQ(plan.slots(), 20);
  EXPECT_EQ(plan.weight(), 20u);
  SamplingSchedule schedule(plan, 7);
  std::map<std::int64_t, int> drawn;
  for (int i = 0; i < 20000; ++i) {
    const auto offset = schedule.next_offset();
    ASSERT_EQ(offset % plan.slot(), std::chrono::nanoseconds(0)) << "windows start on a slot";
    ++drawn[offset / plan.slot()];
  }
  ASSERT_EQ(drawn.size(), 20u);
  for (const auto& [slot, n] : drawn) EXPECT_NEAR(n, 1000, 150) << "slot " << slot;
  // A window that does not divide its period is rounded to one that does.
  plan.window = std::chrono::milliseconds(30);
  EXPECT_EQ(plan.slots(), 33);
  EXPECT_EQ(plan.slot() * plan.slots(), plan.period - plan.period % plan.slots());
}
