#pragma once
// cudascope's own traces of a four-rank NCCL job, written by the trace writer from the
// profiler's records (profiler/src/nccl_nvtx.h): tensor-parallel pairs {0,1},{2,3} and
// data-parallel pairs {0,2},{1,3}, each pair one NCCL communicator, where the pairs {2,3} run
// one collective more (a broadcast) each step, so pairing by order joins different
// communicators' operations. Shared by the analysis's pairing tests and the viewer's.

#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/profiler/record.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::analysis::testing {

// The NCCL communicators of the job (NCCL's commHash; one above INT64_MAX).
inline std::uint64_t tp_communicator(int rank) { return rank < 2 ? 0x1a2b3c4d5e6f7081 : 0xf00dfacecafe0123; }
inline std::uint64_t dp_communicator(int rank) { return rank % 2 == 0 ? 0x2222333344445555 : 0x6666777788889999; }
inline std::string hex(std::uint64_t hash) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(hash));
  return text;
}

// How NCCL launched the kernel: from 2.22 on with the driver's cuLaunchKernelEx, which
// cudascope records inside NCCL's ranges (no flow: the kernel's correlation id names it);
// before, with the runtime's cudaLaunchKernelExC (an ac2g flow); or, in a group
// (ncclGroupStart/End), from ncclGroupEnd, outside the range of the call.
enum class Launch { driver, runtime, outside_range };

// A rank's trace as cudascope writes it: the profiler's records (nccl_nvtx.h) through the trace
// writer. Each NCCL call is an NVTX range in the domain "NCCL" whose payload is the
// communicator's hash (none before NCCL 2.25), the launch inside it, and the kernel on the device.
// Every rank numbers its correlation ids from the same start, as separate processes do.
class CudascopeRank {
 public:
  explicit CudascopeRank(int rank, bool name_communicators = true) : rank_(rank), name_communicators_(name_communicators) {}
  int rank() const { return rank_; }

  // `op` numbers the operation the same on every rank that runs it; the kernel lasts 10 + op us,
  // so a pair's parts show whether they are one operation.
  void collective(std::uint64_t communicator, const std::string& collective, int op, Launch launch = Launch::driver) {
    const std::uint32_t correlation = next_correlation_++;
    nvtx_push("nccl" + collective, communicator, now_ns_);
    if (launch != Launch::outside_range) launch_call(launch, correlation, now_ns_ + 1000);
    nvtx_pop(now_ns_ + 5000);
    if (launch == Launch::outside_range) launch_call(Launch::driver, correlation, now_ns_ + 6000);
    kernel("ncclDevKernel_" + collective + "_RING_LL", correlation, now_ns_ + 10000, 10 + op);
    now_ns_ += 100000;
  }

  // The trace, as `cudascope run` leaves it at `path` (plain JSON).
  void write(const std::string& path) const {
    auto sink = cudascope::exporters::open_chrome_trace(path);
    cudascope::profiler::TraceInfo info;
    info.process_id = 4000 + static_cast<std::uint32_t>(rank_);
    info.start_ns = 1000000;
    info.activities = "kernel,nvtx,launch";
    info.source = "cupti";
    info.rank = rank_;
    info.world_size = 4;
    sink->begin(info);
    sink->write(records_.data(), records_.size());
    sink->end({});
  }

  // The trace's JSON text.
  std::string json() const {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("nccl_rank_" + std::to_string(getpid()) + "_" + std::to_string(rank_) + ".json"))
                                 .string();
    write(path);
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    return text;
  }

  // The trace read back.
  TraceLoadResult load() const {
    TraceLoadResult loaded = load_trace_text(json(), "rank " + std::to_string(rank_));
    EXPECT_TRUE(loaded.ok()) << loaded.error;
    return loaded;
  }

  std::vector<CommunicatorCollectives> communicators() const {
    const TraceLoadResult loaded = load();
    return loaded.ok() ? collectives_by_communicator(*loaded.model) : std::vector<CommunicatorCollectives>{};
  }

 private:
  static constexpr char kNcclDomain[] = "NCCL";  // a domain's record holds its interned name
  using Record = cudascope::profiler::Record;
  using RecordKind = cudascope::profiler::RecordKind;

  std::uint32_t thread() const { return 7000 + static_cast<std::uint32_t>(rank_); }

  void nvtx_push(const std::string& name, std::uint64_t communicator, std::uint64_t at) {
    Record r = cudascope::profiler::make_record(RecordKind::kNvtxPush);
    r.thread_id = thread();
    r.stream = reinterpret_cast<std::intptr_t>(kNcclDomain);
    r.start_ns = r.end_ns = at;
    r.text_size = static_cast<std::uint16_t>(name.size());
    std::memcpy(r.u.nvtx.text, name.data(), std::min(name.size(), sizeof r.u.nvtx.text));
    if (name_communicators_) {
      r.u.nvtx.payload_kind = cudascope::profiler::NvtxPayloadKind::kUint64;
      r.u.nvtx.payload = communicator;
    }
    records_.push_back(r);
  }

  void nvtx_pop(std::uint64_t at) {
    Record r = cudascope::profiler::make_record(RecordKind::kNvtxPop);
    r.thread_id = thread();
    r.stream = reinterpret_cast<std::intptr_t>(kNcclDomain);
    r.start_ns = r.end_ns = at;
    records_.push_back(r);
  }

  void launch_call(Launch launch, std::uint32_t correlation, std::uint64_t at) {
    const bool runtime = launch == Launch::runtime;
    Record r = cudascope::profiler::make_record(runtime ? RecordKind::kRuntimeApi : RecordKind::kDriverApi);
    r.thread_id = thread();
    r.correlation_id = correlation;
    r.start_ns = at;
    r.end_ns = at + 2000;
    r.u.api = {runtime ? "cudaLaunchKernelExC" : "cuLaunchKernelEx", runtime ? 430u : 652u, 0, 0};
    records_.push_back(r);
  }

  void kernel(const std::string& name, std::uint32_t correlation, std::uint64_t at, int duration_us) {
    names_.push_back(std::make_unique<std::string>(name));  // a record points at its kernel's name
    Record r = cudascope::profiler::make_device_record(RecordKind::kKernel, rank_, 13, at,
                                                       at + static_cast<std::uint64_t>(duration_us) * 1000, correlation);
    r.u.kernel = {names_.back()->c_str(), {1, 1, 1}, {64, 1, 1}, 32, 0, 0, 0};
    records_.push_back(r);
  }

  int rank_;
  bool name_communicators_;
  std::uint32_t next_correlation_ = 500;
  std::uint64_t now_ns_ = 2000000;
  std::vector<Record> records_;
  std::vector<std::unique_ptr<std::string>> names_;
};

// Two steps of: (pairs {2,3} only) a broadcast on the tensor-parallel communicator, two
// all-reduces on it, one on the data-parallel one. The second tensor-parallel all-reduce of
// rank 1 is launched as NCCL before 2.22 did.
inline std::vector<CudascopeRank> nccl_job(bool name_communicators = true) {
  std::vector<CudascopeRank> ranks;
  for (int r = 0; r < 4; ++r) {
    CudascopeRank rank(r, name_communicators);
    for (int step = 0; step < 2; ++step) {
      const int op = step * 10;
      if (r >= 2) rank.collective(tp_communicator(r), "Broadcast", op + 1);
      rank.collective(tp_communicator(r), "AllReduce", op + 2);
      rank.collective(tp_communicator(r), "AllReduce", op + 3, r == 1 ? Launch::runtime : Launch::driver);
      rank.collective(dp_communicator(r), "AllReduce", op + 4);
    }
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

}  // namespace cudascope::analysis::testing
