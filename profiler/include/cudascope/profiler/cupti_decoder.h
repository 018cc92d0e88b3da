#pragma once
// Turns a completed CUPTI activity buffer into Records. Knows the record versions CUDA 13's
// CUPTI writes (Kernel10, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, API, Marker2,
// MarkerData2, Overhead3, Device5, Context3, Stream, ExternalCorrelation). Kinds it does
// not model are counted in skipped(), never misread. Kernels, copies and memsets whose time
// is zero or runs backwards are counted in incomplete() and not passed on: a forced flush
// (at the end of a recording) hands over records of work still running, which CUPTI says
// may hold 0 timestamps; passed on, one would sit at time 0 or last 2^64 ns.
//
// Pure decoding: tests feed it buffers built by hand, no GPU needed. Not thread-safe: one
// decoder per CUPTI source; CUPTI completes buffers on one thread at a time.

#include <cudascope/profiler/record.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::profiler {

class CuptiDecoder {
 public:
  using Output = std::function<void(const Record* records, std::size_t count)>;

  // Decodes `valid_bytes` of `buffer` and hands the records to `out` in one call.
  // Returns the number of CUPTI records read.
  std::size_t decode(std::uint8_t* buffer, std::size_t valid_bytes, const Output& out);

  std::uint64_t skipped() const noexcept { return skipped_; }
  std::uint64_t incomplete() const noexcept { return incomplete_; }

 protected:
  // The name of a runtime/driver API function by callback id, without version suffix
  // ("cudaLaunchKernel"); virtual so tests can decode without asking CUPTI.
  virtual const char* api_name(bool runtime, std::uint32_t callback_id);

 private:
  std::vector<Record> scratch_;
  DeviceMemoryTally device_memory_;  // what the process holds per device, from memory records
  std::unordered_map<std::uint32_t, int> context_devices_;  // from context records
  std::unordered_map<std::uint64_t, const char*> api_names_;
  std::uint64_t skipped_ = 0;
  std::uint64_t incomplete_ = 0;
  void push_work(const Record& record);  // a kernel, copy or memset: kept when its time is whole
};

}  // namespace cudascope::profiler
