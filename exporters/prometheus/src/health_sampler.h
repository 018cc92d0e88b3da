#pragma once
// Reads device health on its own thread, so a scrape costs only formatting: some NVML calls
// take milliseconds (PCIe throughput is a 20 ms sample, process queries grow with the
// processes) and GPM figures need a window between two samples.
//
// Call order: construct (reads every device once before returning) -> latest() from any
// thread -> destroy (stops the thread). Thread-safe.

#include <cudascope/cuda/telemetry.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cudascope::metrics::detail {

class HealthSampler {
 public:
  // One device's figures, or why there are none (NVML missing, device lost).
  struct Reading {
    std::optional<cuda::DeviceTelemetry> figures;
    std::string error;
  };
  // Reads `device` now, on the calling thread.
  static Reading read(int device);

  HealthSampler(std::vector<int> devices, std::chrono::milliseconds interval);
  ~HealthSampler();
  HealthSampler(const HealthSampler&) = delete;
  HealthSampler& operator=(const HealthSampler&) = delete;

  // The latest reading of `device` (one not sampled is read now).
  Reading latest(int device) const;

 private:
  void sample_all();
  void run();

  const std::vector<int> devices_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::map<int, Reading> readings_;
  std::thread thread_;  // last: starts after the rest is built
};

}  // namespace cudascope::metrics::detail
