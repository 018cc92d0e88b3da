#pragma once
// NVML, loaded at run time (these machines have the library with the driver but no header):
// the few entry points the runtime uses, declared here, resolved newest version first.

#include <cudascope/cuda/telemetry.h>

#include <array>
#include <cstdint>
#include <string>

namespace cudascope::cuda::detail {

class NvmlLibrary {
 public:
  // Loads libnvidia-ml.so.1 and initialises NVML once; throws cuda::Error naming the library
  // and the reason when it cannot.
  static NvmlLibrary& instance();

  // The NVML device for a CUDA device, matched by UUID ("GPU-...").
  void* device_by_uuid(const std::string& uuid);

  std::optional<int> utilization(void* device, bool memory);
  std::optional<int> temperature(void* device);
  std::optional<int> power_milliwatts(void* device);
  std::optional<int> sm_clock_mhz(void* device);
  std::optional<std::uint64_t> energy_millijoules(void* device);
  std::vector<GpuProcess> processes(void* device);
  // The optional figures of DeviceTelemetry (memory clock onwards); each stays empty when
  // the driver lacks the entry point or the device does not report it.
  void read_extra_figures(void* device, DeviceTelemetry& out);

 private:
  NvmlLibrary();
  struct Api;
  const Api* api_;
};

}  // namespace cudascope::cuda::detail
