// External correlation ids (profiler::push_external_correlation_id) in the written trace:
// the launch and the kernel whose correlation id CUPTI tied to an external id carry it as
// "External id", as Kineto writes it; others carry none. Fabricated records, as CUPTI
// delivers them (the id's record may come before or after the kernel's).
#include <cudascope/exporters/chrome_trace_writer.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace cudascope;
using namespace cudascope::profiler;

namespace {

constexpr std::uint32_t kPid = 4194305;  // above pid_max: no /proc lookups
constexpr std::uint64_t kStart = 1000000000;

Record at(RecordKind kind, std::uint64_t start, std::uint64_t end, std::uint32_t correlation) {
  Record r = make_record(kind);
  r.start_ns = start;
  r.end_ns = end;
  r.thread_id = kPid;
  r.correlation_id = correlation;
  return r;
}

Record launch(std::uint64_t t, std::uint32_t correlation) {
  Record r = at(RecordKind::kRuntimeApi, t, t + 1000, correlation);
  r.u.api.name = "cudaLaunchKernel";
  r.u.api.callback_id = 211;
  return r;
}

Record kernel(std::uint64_t t, std::uint32_t correlation) {
  Record r = at(RecordKind::kKernel, t, t + 5000, correlation);
  r.thread_id = ~0u;
  r.device = 0;
  r.stream = 7;
  r.u.kernel = {"_Z6kernelv", {1, 1, 1}, {32, 1, 1}, 16, 0, 0};
  return r;
}

Record external(std::uint32_t correlation, std::uint64_t id) {
  Record r = at(RecordKind::kExternalCorrelation, 0, 0, correlation);
  r.thread_id = ~0u;
  r.u.external = {id, 0};
  return r;
}

TEST(ExternalCorrelationTest, LaunchesAndKernelsCarryTheirExternalId) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("external_ids." + std::to_string(getpid()) + ".json")).string();
  // CUPTI reports the external id record just before the API record it annotates.
  std::vector<Record> records = {external(5, 77),         launch(kStart + 1000, 5), kernel(kStart + 9000, 5),
                                 external(6, 1ull << 40), launch(kStart + 3000, 6), kernel(kStart + 20000, 6),
                                 launch(kStart + 4000, 9), kernel(kStart + 30000, 9)};
  {
    auto sink = exporters::open_chrome_trace(path);
    TraceInfo info;
    info.process_id = kPid;
    info.start_ns = kStart;
    info.source = "sim";
    sink->begin(info);
    sink->write(records.data(), records.size());
    sink->flush();
    sink->end(TraceSummary{});
  }
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  std::map<std::pair<std::string, long long>, long long> external_of;  // (cat, correlation) -> id, -1 for none
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("correlation")) continue;
    const auto& args = e["args"];
    external_of[{e.value("cat", ""), args["correlation"].get<long long>()}] =
        args.contains("External id") ? args["External id"].get<long long>() : -1;
  }
  auto id_of = [&](const std::string& cat, long long correlation) {
    const auto it = external_of.find({cat, correlation});
    return it == external_of.end() ? -2 : it->second;  // -2: no such event
  };
  EXPECT_EQ(id_of("kernel", 5), 77);
  EXPECT_EQ(id_of("cuda_runtime", 5), 77);
  EXPECT_EQ(id_of("kernel", 6), 1ll << 40) << "64-bit ids kept whole";
  EXPECT_EQ(id_of("cuda_runtime", 6), 1ll << 40);
  EXPECT_EQ(id_of("kernel", 9), -1) << "no external id pushed";
  EXPECT_EQ(id_of("cuda_runtime", 9), -1);
  EXPECT_EQ(external_of.size(), 6u) << trace.dump().substr(0, 2000);
}

}  // namespace
