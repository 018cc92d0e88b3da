// Rank summaries of small hand-written traces: compute, communication, exposed communication
// with and without overlap, idle, copies, steps (ProfilerStep, step names, prefixes, nesting),
// several devices; the JSON round trip; and a trace our writer made with an NCCL kernel.
#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/util/communication_kernel.h>

#include <gtest/gtest.h>

#include <functional>

#include <unistd.h>

#include <filesystem>
#include <string>

using namespace cudascope::analysis;

namespace {

// Times in the events are microseconds; the figures come back in nanoseconds.
constexpr std::int64_t kUs = 1000;

std::string trace(const std::string& events, const std::string& header = "") {
  return "{" + header + "\"traceEvents\":[" + events + "]}";
}

std::string slice(const std::string& name, const std::string& cat, int pid, int tid, int ts, int dur,
                  const std::string& args = "") {
  return "{\"ph\":\"X\",\"name\":\"" + name + "\",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         (args.empty() ? "" : ",\"args\":" + args) + "}";
}

// GPU 0 is pid 0 (Kineto's convention); the host is pid 1000.
RankSummary summarize(const std::string& text, const RankSummaryOptions& options = {}) {
  auto loaded = load_trace_text(text, "test");
  EXPECT_TRUE(loaded.ok()) << loaded.error;
  return loaded.ok() ? summarize_rank(*loaded.model, "test", options) : RankSummary{};
}

const std::string kGpuName = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}},";
const std::string kNccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

TEST(RankSummaryTest, CommunicationAfterComputeIsAllExposed) {
  const RankSummary s = summarize(trace(kGpuName + slice("ProfilerStep#1", "user_annotation", 1000, 1, 0, 250) + "," +
                                        slice("gemm", "kernel", 0, 7, 0, 100) + "," + slice(kNccl, "kernel", 0, 9, 100, 100)));
  ASSERT_EQ(s.steps.size(), 1u);
  const StepTimes& t = s.steps[0];
  EXPECT_EQ(t.name, "ProfilerStep#1");
  EXPECT_EQ(t.duration_ns(), 250 * kUs);
  EXPECT_EQ(t.compute_ns, 100 * kUs);
  EXPECT_EQ(t.communication_ns, 100 * kUs);
  EXPECT_EQ(t.exposed_communication_ns, 100 * kUs);
  EXPECT_EQ(t.idle_ns, 50 * kUs);
  EXPECT_EQ(s.communication_kernels, 1);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.step_rule, "ProfilerStep");
}

TEST(RankSummaryTest, CommunicationOverlappedByComputeOnAnotherStreamIsHidden) {
  // compute [0,100) on stream 7 and [120,140) on stream 8; NCCL [50,150) on stream 9:
  // exposed = [100,120) + [140,150) = 30 us; busy = [0,150); idle = 100 of the 250 us step.
  const RankSummary s = summarize(trace(kGpuName + slice("ProfilerStep#1", "user_annotation", 1000, 1, 0, 250) + "," +
                                        slice("gemm", "kernel", 0, 7, 0, 100) + "," + slice("relu", "kernel", 0, 8, 120, 20) +
                                        "," + slice(kNccl, "kernel", 0, 9, 50, 100)));
  ASSERT_EQ(s.steps.size(), 1u);
  const StepTimes& t = s.steps[0];
  EXPECT_EQ(t.compute_ns, 120 * kUs);
  EXPECT_EQ(t.communication_ns, 100 * kUs);
  EXPECT_EQ(t.exposed_communication_ns, 30 * kUs);
  EXPECT_EQ(t.idle_ns, 100 * kUs);
}

TEST(RankSummaryTest, ComputeOnAnotherDeviceDoesNotHideCommunication) {
  const RankSummary s = summarize(trace(slice("step", "nvtx", 1000, 1, 0, 100) + "," + slice("gemm", "kernel", 1, 7, 0, 100) +
                                        "," + slice(kNccl, "kernel", 0, 9, 0, 100)));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].exposed_communication_ns, 100 * kUs);
  EXPECT_EQ(s.steps[0].idle_ns, 0) << "each device was busy the whole step";
  EXPECT_EQ(s.steps[0].compute_ns + s.steps[0].communication_ns, 200 * kUs) << "summed over the two devices";
  EXPECT_EQ(s.devices, (std::vector<int>{0, 1}));
}

TEST(RankSummaryTest, OurMarkMakesAKernelCommunicationWhateverItsName) {
  const RankSummary s = summarize(trace(slice("step", "nvtx", 1000, 1, 0, 100) + "," +
                                        slice("my_allreduce", "kernel", 0, 9, 0, 40, "{\"communication\":true}")));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].communication_ns, 40 * kUs);
  EXPECT_EQ(s.steps[0].compute_ns, 0);
}

// The one rule (util/communication_kernel.h through is_communication_kernel_event) that the
// summaries and the viewer's clock alignment share: a kernel slice, by NCCL's name or our mark.
TEST(CommunicationKernelRuleTest, OnlyKernelSlicesNamedByNcclOrMarkedAreCommunication) {
  auto loaded = load_trace_text(
      trace(kGpuName + slice(kNccl, "kernel", 0, 9, 0, 10) + "," + slice("ncclKernel_AllGather_RING_LL", "Kernel", 0, 9, 20, 10) +
            "," + slice("allreduce_custom", "kernel", 0, 9, 40, 10, "{\"communication\":true}") + "," +
            slice("gemm", "kernel", 0, 7, 60, 10) + "," + slice(kNccl, "cpu_op", 1000, 1, 0, 10) + "," +
            slice("my_nccl_helper", "kernel", 0, 7, 80, 10)),
      "test");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const TraceModel& model = *loaded.model;
  std::vector<std::string> communication;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    if (is_communication_kernel_event(model, model.event(i))) communication.emplace_back(model.name(model.event(i)));
  }
  EXPECT_EQ(communication, (std::vector<std::string>{kNccl, "ncclKernel_AllGather_RING_LL", "allreduce_custom"}));
}

TEST(CommunicationKernelRuleTest, CollectiveComesFromBothCurrentNameForms) {
  EXPECT_EQ(cudascope::util::collective_of(kNccl), "AllReduce");
  EXPECT_EQ(cudascope::util::collective_of("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*)"), "AllGather");
  EXPECT_EQ(cudascope::util::collective_of("ncclAllReduceRingLLKernel_sum_f32(ncclColl)"), "");
  EXPECT_TRUE(cudascope::util::is_communication_kernel("ncclAllReduceRingLLKernel_sum_f32(ncclColl)"));
  EXPECT_FALSE(cudascope::util::is_communication_kernel("my_nccl_helper"));
}

TEST(RankSummaryTest, CopiesAreBusyButNeitherComputeNorTheyHideCommunication) {
  const RankSummary s = summarize(trace(slice("step", "nvtx", 1000, 1, 0, 100) + "," +
                                        slice("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 0, 7, 0, 60) + "," +
                                        slice(kNccl, "kernel", 0, 9, 20, 20)));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].copy_ns, 60 * kUs);
  EXPECT_EQ(s.steps[0].exposed_communication_ns, 20 * kUs);
  EXPECT_EQ(s.steps[0].idle_ns, 40 * kUs);
}

TEST(RankSummaryTest, DeviceWorkIsCountedWithinEachStepsSpan) {
  // A kernel running across the boundary of two steps counts in each for its part.
  const RankSummary s = summarize(trace(slice("step 0", "nvtx", 1000, 1, 0, 100) + "," + slice("step 1", "nvtx", 1000, 1, 100, 100) +
                                        "," + slice("gemm", "kernel", 0, 7, 80, 50)));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].compute_ns, 20 * kUs);
  EXPECT_EQ(s.steps[1].compute_ns, 30 * kUs);
  EXPECT_EQ(s.total.duration_ns(), 50 * kUs) << "the whole trace: first to last device activity";
  EXPECT_EQ(s.total.compute_ns, 50 * kUs);
}

TEST(RankSummaryTest, ProfilerStepsWinOverStepNamesAndNestedStepsCountOnce) {
  const RankSummary s = summarize(trace(kGpuName + slice("ProfilerStep#4", "user_annotation", 1000, 1, 0, 100) + "," +
                                        slice("train_step", "user_annotation", 1000, 1, 10, 50) + "," +
                                        slice("ProfilerStep#5", "user_annotation", 1000, 1, 100, 100) + "," +
                                        slice("ProfilerStep#5", "gpu_user_annotation", 0, 7, 100, 100)));
  ASSERT_EQ(s.steps.size(), 2u) << "the GPU-side copy of a step is not another step";
  EXPECT_EQ(s.steps[0].name, "ProfilerStep#4");
  EXPECT_EQ(s.steps[1].name, "ProfilerStep#5");

  const RankSummary nested = summarize(trace(slice("iteration 1", "nvtx", 1000, 1, 0, 100) + "," +
                                             slice("step", "nvtx", 1000, 1, 10, 50) + "," +
                                             slice("iteration 2", "nvtx", 1000, 1, 100, 100)));
  ASSERT_EQ(nested.steps.size(), 2u);
  EXPECT_EQ(nested.steps[0].name, "iteration 1");
  EXPECT_EQ(nested.step_rule, "step names");
}

TEST(RankSummaryTest, AStepEndingJustAfterTheNextBeginsIsStillAStep) {
  // Kineto rounds ts and dur separately: ProfilerStep#1 ends 1 ns after ProfilerStep#2 begins.
  const std::string steps = "{\"ph\":\"X\",\"name\":\"ProfilerStep#1\",\"cat\":\"user_annotation\",\"pid\":1000,"
                            "\"tid\":1,\"ts\":0,\"dur\":100.001},"
                            "{\"ph\":\"X\",\"name\":\"ProfilerStep#2\",\"cat\":\"user_annotation\",\"pid\":1000,"
                            "\"tid\":1,\"ts\":100,\"dur\":100}";
  const RankSummary s = summarize(trace(kGpuName + steps + "," + slice("gemm", "kernel", 0, 7, 120, 50)));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[1].name, "ProfilerStep#2");
  EXPECT_EQ(s.steps[1].compute_ns, 50 * kUs);
}

TEST(RankSummaryTest, APrefixChoosesTheSteps) {
  RankSummaryOptions options;
  options.step_prefix = "fwd-bwd";
  const RankSummary s = summarize(trace(slice("fwd-bwd 0", "nvtx", 1000, 1, 0, 100) + "," + slice("step 0", "nvtx", 1000, 1, 0, 200) +
                                        "," + slice("fwd-bwd 1", "nvtx", 1000, 1, 100, 100)),
                                  options);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[1].name, "fwd-bwd 1");
  EXPECT_EQ(s.step_rule, "prefix 'fwd-bwd'");
}

TEST(RankSummaryTest, NoStepsGiveTheWholeTraceOnly) {
  const RankSummary s = summarize(trace(slice("gemm", "kernel", 0, 7, 10, 30) + "," + slice("gemm", "kernel", 0, 7, 60, 40)));
  EXPECT_TRUE(s.steps.empty());
  EXPECT_EQ(s.step_rule, "none");
  EXPECT_EQ(s.total.duration_ns(), 90 * kUs);
  EXPECT_EQ(s.total.compute_ns, 70 * kUs);
  EXPECT_EQ(s.total.idle_ns, 20 * kUs);
}

TEST(RankSummaryTest, StepNames) {
  for (const char* name : {"step", "Step 3", "step#12", "train_step", "Training Step #4", "iteration 7", "iter_2"}) {
    EXPECT_TRUE(is_step_name(name)) << name;
  }
  for (const char* name : {"ProfilerStep#3", "optimizer.step", "forward", "stepper", "", "12"}) {
    EXPECT_FALSE(is_step_name(name)) << name;
  }
}

TEST(RankSummaryTest, DistributedInfoOfAKinetoTraceIsKept) {
  const RankSummary s = summarize(trace(slice("gemm", "kernel", 0, 7, 0, 10),
                                        "\"schemaVersion\":1,\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":3,"
                                        "\"world_size\":8},"));
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.world_size, 8);
  EXPECT_EQ(s.local_rank, -1) << "Kineto writes no local_rank";
  EXPECT_EQ(s.backend, "nccl");
  EXPECT_EQ(s.format, "kineto");
}

TEST(RankSummaryJsonTest, RoundTripKeepsEveryFigure) {
  RankSummary s = summarize(trace(kGpuName + slice("ProfilerStep#1", "user_annotation", 1000, 1, 0, 250) + "," +
                                  slice("gemm", "kernel", 0, 7, 0, 100) + "," + slice(kNccl, "kernel", 0, 9, 50, 100)));
  s.rank = 2;
  s.local_rank = 0;
  s.world_size = 4;
  s.host = "node \"b\"";
  const RankSummaryReadResult back = parse_rank_summary(rank_summary_json(s), "s.json");
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(rank_summary_json(back.summary), rank_summary_json(s));
  EXPECT_EQ(back.summary.host, "node \"b\"");
  ASSERT_EQ(back.summary.steps.size(), 1u);
  EXPECT_EQ(back.summary.steps[0].exposed_communication_ns, s.steps[0].exposed_communication_ns);
}

TEST(RankSummaryJsonTest, ErrorsNameTheFileAndTheProblem) {
  EXPECT_NE(parse_rank_summary("{\"traceEvents\":[]}", "t.json").error.find("t.json: not a rank summary"), std::string::npos);
  EXPECT_NE(parse_rank_summary("{\"cudascopeRankSummary\":99}", "s.json").error.find("version 99"), std::string::npos);
  EXPECT_NE(parse_rank_summary("{\"cudascopeRankSummary\":1,\"rank\":\"two\"}", "s.json").error.find("\"rank\" is not an integer"),
            std::string::npos);
  EXPECT_NE(parse_rank_summary("{\"cudascopeRankSummary\":1,", "s.json").error.find("s.json: not JSON"), std::string::npos);
}

// A time or count no recording can produce (negative, or past 2^62 ns, where the merge's sums
// would overflow), a step ending before it begins, or a rank out of range: the file is refused,
// naming the key, rather than merged into tables of nonsense.
TEST(RankSummaryJsonTest, ValuesOutOfRangeAreRefusedNamingTheKey) {
  RankSummary s = summarize(trace(kGpuName + slice("ProfilerStep#1", "user_annotation", 1000, 1, 0, 250) + "," +
                                  slice("gemm", "kernel", 0, 7, 0, 100)));
  ASSERT_EQ(s.steps.size(), 1u);
  s.rank = 1;
  s.world_size = 2;
  ASSERT_TRUE(parse_rank_summary(rank_summary_json(s), "s.json").ok());
  const auto refused = [&s](const std::function<void(RankSummary&)>& edit) {
    RankSummary edited = s;
    edit(edited);
    return parse_rank_summary(rank_summary_json(edited), "s.json").error;
  };
  EXPECT_NE(refused([](RankSummary& e) { e.steps[0].compute_ns = INT64_MIN; }).find("step 0 \"compute_ns\" is -9223372036854775808"),
            std::string::npos);
  EXPECT_NE(refused([](RankSummary& e) { e.steps[0].communication_ns = INT64_MAX; }).find("\"communication_ns\" is 9223372036854775807"),
            std::string::npos);
  EXPECT_NE(refused([](RankSummary& e) { e.steps[0].start_ns = e.steps[0].end_ns + 1; }).find("\"end_ns\" is before \"start_ns\""),
            std::string::npos);
  EXPECT_NE(refused([](RankSummary& e) { e.kernels = -1; }).find("\"kernels\" is -1"), std::string::npos);
  EXPECT_NE(refused([](RankSummary& e) { e.rank = -2; }).find("\"rank\" is -2"), std::string::npos);
  EXPECT_NE(refused([](RankSummary& e) { e.world_size = 0; }).find("\"world_size\" is 0"), std::string::npos);
  EXPECT_TRUE(parse_rank_summary(rank_summary_json(RankSummary{}), "none.json").ok()) << "rank -1: none given";
  // A Chrome trace's clock may run below 0: its summary's times are read back as written.
  RankSummary early = s;
  early.steps[0].start_ns -= 1'000'000'000;
  early.steps[0].end_ns -= 1'000'000'000;
  ASSERT_LT(early.steps[0].start_ns, 0);
  const RankSummaryReadResult back = parse_rank_summary(rank_summary_json(early), "early.json");
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.summary.steps[0].start_ns, early.steps[0].start_ns);
}

TEST(RankSummaryJsonTest, FilesAreToldFromTracesByContentPlainOrGzip) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string plain = (dir / ("rank_summary_" + std::to_string(getpid()) + ".json")).string();
  const std::string gz = plain + ".gz";
  RankSummary s;
  s.rank = 1;
  ASSERT_EQ(write_rank_summary(s, plain), "");
  ASSERT_EQ(write_rank_summary(s, gz), "");
  EXPECT_TRUE(is_rank_summary_file(plain));
  EXPECT_TRUE(is_rank_summary_file(gz));
  const auto read = read_rank_summary(gz);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.summary.rank, 1);
  std::filesystem::remove(gz);
  { std::FILE* f = std::fopen(plain.c_str(), "w"); std::fputs(trace("").c_str(), f); std::fclose(f); }
  EXPECT_FALSE(is_rank_summary_file(plain));
  std::filesystem::remove(plain);
  EXPECT_FALSE(is_rank_summary_file(plain + ".missing"));
}

// Our writer marks NCCL kernels and writes local_rank; the summary reads both back.
TEST(RankSummaryWriterTest, OurTraceOfAnNcclKernelReadsBackAsCommunication) {
  using namespace cudascope::profiler;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("rank_writer_" + std::to_string(getpid()) + ".json")).string();
  setenv("LOCAL_RANK", "1", 1);
  {
    auto sink = cudascope::exporters::open_chrome_trace(path);
    TraceInfo info;
    info.process_id = 4194305;
    info.start_ns = 1000000;
    info.activities = "kernel";
    info.source = "sim";
    info.rank = 5;
    info.world_size = 8;
    sink->begin(info);
    Record kernel = make_record(RecordKind::kKernel);
    kernel.thread_id = ~0u;
    kernel.device = 1;
    kernel.stream = 3;
    kernel.start_ns = 2000000;
    kernel.end_ns = 2050000;
    kernel.u.kernel = {"_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE", {1, 1, 1},
                       {64, 1, 1}, 32, 0, 0};
    sink->write(&kernel, 1);
    sink->end({});
  }
  unsetenv("LOCAL_RANK");
  auto loaded = load_trace(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const TraceModel& model = *loaded.model;
  EXPECT_EQ(model.rank, 5);
  EXPECT_EQ(model.local_rank, 1);
  EXPECT_EQ(model.world_size, 8);
  EXPECT_EQ(model.distributed_backend, "nccl");
  bool marked = false;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const auto& e = model.event(i);
    if (model.cat(e) != "kernel") continue;
    EXPECT_EQ(model.name(e), "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    EXPECT_EQ(model.arg_string(e, "collective"), "AllReduce");
    marked = model.args_json(e).find("\"communication\":true") != std::string_view::npos;
  }
  EXPECT_TRUE(marked);
  const RankSummary s = summarize_rank(model, path);
  EXPECT_EQ(s.communication_kernels, 1);
  EXPECT_EQ(s.total.communication_ns, 50000);
  EXPECT_EQ(s.total.exposed_communication_ns, 50000);
  EXPECT_EQ(s.devices, std::vector<int>{1});
}

}  // namespace

namespace {

TEST(RankSummaryPathTest, SummaryIsNamedAfterTheTraceInItsDirectory) {
  EXPECT_EQ(rank_summary_path_for_trace("run/trace_3.json.gz"), "run/summary_trace_3.json");
  EXPECT_EQ(rank_summary_path_for_trace("/a.b/trace_0.1234.json"), "/a.b/summary_trace_0.1234.json");
  EXPECT_EQ(rank_summary_path_for_trace("t_norank"), "summary_t_norank.json");
}

}  // namespace
