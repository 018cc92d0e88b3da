#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/exporters/trace_path.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include "flow_pairing.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace cudascope;
using namespace cudascope::profiler;

namespace {

// A process id no process has (above the kernel's pid_max), so thread names are not read from /proc.
constexpr std::uint32_t kPid = 4194305;
constexpr std::uint64_t kStart = 1000000000;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Record at(RecordKind kind, std::uint64_t start, std::uint64_t end = 0) {
  Record r = make_record(kind);
  r.start_ns = start;
  r.end_ns = end == 0 ? start : end;
  r.thread_id = kPid;
  return r;
}

Record push(const char* text, std::uint64_t t) {
  Record r = at(RecordKind::kNvtxPush, t);
  r.text_size = static_cast<std::uint16_t>(std::strlen(text));
  std::memcpy(r.u.nvtx.text, text, r.text_size);
  return r;
}

// One step of a training loop, as the sources record it.
std::vector<Record> step_records() {
  std::vector<Record> records;
  Record device = at(RecordKind::kDevice, kStart);
  device.device = 0;
  device.thread_id = ~0u;
  device.u.device_info = {"cudascope sim device", 17179869184ULL, 9, 0, 132, 1};
  records.push_back(device);
  Record step = push("step 0", kStart + 1000);
  step.u.nvtx.has_color = 1;
  step.u.nvtx.color = 0xff76b900;
  step.u.nvtx.payload_kind = NvtxPayloadKind::kInt64;
  step.u.nvtx.payload = static_cast<std::uint64_t>(-3);
  records.push_back(step);
  Record launch = at(RecordKind::kRuntimeApi, kStart + 2000, kStart + 3500);
  launch.correlation_id = 7;
  launch.u.api.name = "cudaLaunchKernel";
  launch.u.api.callback_id = 211;
  records.push_back(launch);
  Record kernel = at(RecordKind::kKernel, kStart + 10000, kStart + 20250);
  kernel.thread_id = ~0u;
  kernel.device = 0;
  kernel.stream = 7;
  kernel.correlation_id = 7;
  kernel.u.kernel = {"_Z10add_kernelPfS_i", {64, 1, 1}, {256, 1, 1}, 24, 0, 1024};
  records.push_back(kernel);
  Record copy = at(RecordKind::kMemcpy, kStart + 21000, kStart + 22000);
  copy.thread_id = ~0u;
  copy.device = 0;
  copy.stream = 7;
  copy.correlation_id = 8;
  copy.detail = static_cast<std::uint8_t>(CopyKindCode::kDtoH);
  copy.u.copy = {1048576, 0, -1};
  records.push_back(copy);
  Record alloc = at(RecordKind::kAllocator, kStart + 1500);
  alloc.device = 0;
  alloc.stream = 7;
  alloc.u.allocator = {0x7f0000000000ULL, 1048576, 1048576, 2097152};
  records.push_back(alloc);
  records.push_back(at(RecordKind::kNvtxPop, kStart + 23000));
  Record mark = push("checkpoint \"a\"", kStart + 24000);
  mark.kind = RecordKind::kNvtxMark;
  records.push_back(mark);
  records.push_back(push("left open", kStart + 25000));
  return records;
}

void write_trace(const std::string& path, const std::vector<Record>& records, const TraceSummary& summary) {
  auto sink = exporters::open_chrome_trace(path);
  TraceInfo info;
  info.process_id = kPid;
  info.process_name = "python train.py";
  info.start_ns = kStart;
  info.activities = "kernel,memcpy,runtime,nvtx,allocator";
  info.source = "sim";
  info.rank = 1;
  info.world_size = 4;
  sink->begin(info);
  sink->write(records.data(), records.size());
  sink->flush();
  sink->end(summary);
}

}  // namespace

TEST(ChromeTraceWriterTest, StepTraceMatchesTheGoldenFile) {
  const std::string path = temp_path("golden_trace.json");
  write_trace(path, step_records(), {9, 0, 0, kStart + 30000});
  const std::string golden_path = std::string(CUDASCOPE_TEST_DATA) + "/trace_golden.json";
  const std::string written = slurp(path);
  if (std::getenv("CUDASCOPE_UPDATE_GOLDEN") != nullptr) std::ofstream(golden_path, std::ios::binary) << written;
  EXPECT_EQ(written, slurp(golden_path)) << "written to " << path;
  std::filesystem::remove(path);
}

TEST(ChromeTraceWriterTest, WrittenTraceFollowsTheFormatRulesAndClosesOpenRangesAtTheEnd) {
  const std::string path = temp_path("rules_trace.json.gz");
  write_trace(path, step_records(), {9, 0, 0, kStart + 30000});
  const auto read = analysis::read_trace(path);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.complete);
  EXPECT_FALSE(read.trace.repaired);
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{});
  EXPECT_EQ(read.trace.rank, 1);
  EXPECT_EQ(read.trace.world_size, 4);
  int flows = 0;
  for (const auto& e : read.trace.events) {
    if (e.ph == "s" || e.ph == "f") {
      ++flows;
      EXPECT_EQ(e.id, "7") << "the flow joins the launch and its kernel, not the copy without a launch";
    }
    if (e.ph == "E" && e.name == "left open") {
      EXPECT_EQ(e.ts_ns, static_cast<std::int64_t>(kStart + 30000));
    }
    if (e.ph == "X" && e.cat == "kernel") {
      EXPECT_EQ(e.name, "add_kernel(float*, float*, int)") << "names are demangled";
      EXPECT_EQ(e.dur_ns, 10250);
    }
  }
  EXPECT_EQ(flows, 2);
  std::filesystem::remove(path);
}

TEST(ChromeTraceWriterTest, ValidatorReportsUnbalancedRangesAndUnpairedFlows) {
  const std::string text =
      "{\"traceEvents\":[\n"
      "{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1.0},\n"
      "{\"ph\":\"E\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":2.0},\n"
      "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":2.0},\n"
      "{\"ph\":\"s\",\"name\":\"ac2g\",\"cat\":\"ac2g\",\"id\":5,\"pid\":1,\"tid\":1,\"ts\":3.0},\n"
      "{\"ph\":\"X\",\"name\":\"k\",\"pid\":\"1\",\"tid\":1,\"ts\":3.0}\n"
      "],\"cudascopeSummary\":{\"complete\":true}}";
  const auto read = analysis::parse_trace(text, "inline");
  ASSERT_TRUE(read.ok()) << read.error;
  const auto problems = analysis::validate_trace(read.trace);
  const auto has = [&](const std::string& needle) {
    for (const auto& p : problems) {
      if (p.find(needle) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("closes 'a'")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(has("no open \"B\""));
  EXPECT_TRUE(has("flow ac2g/5: 1 \"s\" and 0 \"f\""));
  EXPECT_TRUE(has("\"pid\" missing or not an integer"));
  EXPECT_TRUE(has("\"dur\" missing"));
}

namespace {

using cudascope::exporters::detail::FlowPairing;

TEST(FlowPairingTest, PairsALaunchWithItsKernelWhicheverComesFirst) {
  FlowPairing flows;
  EXPECT_FALSE(flows.on_api(7, "cudaLaunchKernel", {11, 100}));
  const auto pair = flows.on_device(7, {1, 3, 250});
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->id, 7u);
  EXPECT_EQ(pair->host.tid, 11u);
  EXPECT_EQ(pair->host.ts, 100u);
  EXPECT_EQ(pair->device.device, 1);
  EXPECT_EQ(pair->device.stream, 3);
  EXPECT_EQ(pair->device.ts, 250u);
  EXPECT_FALSE(flows.on_device(7, {1, 3, 300})) << "each id pairs once";

  // Device records often arrive first (CUPTI delivers them in their own buffers).
  EXPECT_FALSE(flows.on_device(8, {0, 7, 500}));
  const auto late = flows.on_api(8, "cudaMemcpyAsync", {12, 400});
  ASSERT_TRUE(late);
  EXPECT_EQ(late->host.tid, 12u);
  EXPECT_EQ(late->device.stream, 7);
}

TEST(FlowPairingTest, CallsThatStartNoDeviceWorkAreNotKeptAndGraphKernelsPairOnce) {
  FlowPairing flows;
  EXPECT_FALSE(flows.on_api(9, "cudaStreamSynchronize", {1, 10}));
  EXPECT_FALSE(flows.on_device(9, {0, 1, 20})) << "a sync call is no launch";
  EXPECT_FALSE(flows.on_api(10, nullptr, {1, 10}));
  // A graph launch: several kernels with the launch's id; the first one gets the arrow.
  EXPECT_FALSE(flows.on_device(11, {0, 2, 30}));
  EXPECT_FALSE(flows.on_device(11, {0, 2, 40}));
  const auto pair = flows.on_api(11, "cudaGraphLaunch", {1, 5});
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->device.ts, 30u);
}

}  // namespace

// Allocations into a CUDA graph's private pool are marked on the device's memory track with
// the pool's id; the device's own allocations are not.
TEST(ChromeTraceWriterTest, GraphPoolAllocationsAreMarkedWithTheirPool) {
  std::vector<Record> records;
  Record own = at(RecordKind::kAllocator, kStart + 1000);
  own.device = 0;
  own.u.allocator = {0x7f0000000000ULL, 512, 512, 2097152};
  records.push_back(own);
  Record in_pool = at(RecordKind::kAllocator, kStart + 2000);
  in_pool.device = 0;
  in_pool.u.allocator = {0x7f0000200000ULL, 4096, 4608, 4194304, {3, 0}};
  records.push_back(in_pool);
  const std::string path = temp_path("graph_pool_trace.json");
  write_trace(path, records, {2, 0, 0, kStart + 3000});
  const std::string text = slurp(path);
  const std::string mark = "\"name\":\"Graph pool alloc\"";
  const auto at_mark = text.find(mark);
  ASSERT_NE(at_mark, std::string::npos) << text;
  EXPECT_EQ(text.find(mark, at_mark + 1), std::string::npos) << "one mark: the device's own allocation has none";
  const auto line_start = text.rfind('\n', at_mark) + 1;
  const std::string event = text.substr(line_start, text.find('\n', at_mark) - line_start);
  EXPECT_NE(event.find("\"ph\":\"i\""), std::string::npos) << event;
  EXPECT_NE(event.find("\"pool\":[3,0]"), std::string::npos) << event;
  EXPECT_NE(event.find("\"bytes\":4096"), std::string::npos) << event;
  std::filesystem::remove(path);
}

// `cudascope run` tells its own files from another run's by the id in their header
// (exporters/trace_path.h), plain or gzip; a header not all written yet names none.
TEST(ChromeTraceWriterTest, TheHeaderNamesTheRunThatRecordsTheProcess) {
  setenv("CUDASCOPE_RUN_ID", "4242-0123abcd", 1);
  for (const std::string name : {"run_trace.json", "run_trace.json.gz"}) {
    const std::string path = temp_path(name);
    write_trace(path, step_records(), {9, 0, 0, kStart + 30000});
    EXPECT_EQ(exporters::trace_file_run_id(path), "4242-0123abcd") << name;
    const auto read = analysis::read_trace(path);
    EXPECT_TRUE(read.ok()) << read.error;
    std::filesystem::remove(path);
  }
  const std::string cut = temp_path("run_trace_cut.json");
  write_trace(cut, step_records(), {9, 0, 0, kStart + 30000});
  std::filesystem::resize_file(cut, 60);  // before "traceEvents"
  EXPECT_EQ(exporters::trace_file_run_id(cut), std::nullopt);
  unsetenv("CUDASCOPE_RUN_ID");
  write_trace(cut, step_records(), {9, 0, 0, kStart + 30000});
  EXPECT_EQ(exporters::trace_file_run_id(cut), std::nullopt) << "written outside a run";
  EXPECT_EQ(exporters::trace_file_run_id(temp_path("no_such_trace.json")), std::nullopt);
  std::filesystem::remove(cut);
}
