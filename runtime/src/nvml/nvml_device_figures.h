#pragma once
// The NVML figures beyond NvmlLibrary's: field values (memory temperature, NVLink bytes),
// the framebuffer's reserved part, XID error events, per-process utilization and Hopper's
// GPM metrics. Each entry point is optional (older drivers lack some) and each figure stays
// empty where the driver or the device does not give it.
//
// Some figures need state kept between reads of a device: the XID event set (registered at
// the first read), the last process-utilization timestamp and the previous GPM sample. So
// XID counts run from the first read, process utilization covers NVML's samples since the
// previous read, and GPM figures the window since the previous read. Thread-safe.

#include <cudascope/cuda/telemetry.h>

namespace cudascope::cuda::detail {

class NvmlDeviceFigures {
 public:
  // Resolves the entry points in the NVML library NvmlLibrary loaded and initialised.
  static NvmlDeviceFigures& instance();

  // Fills the figures above into `out` for the NVML device `device`.
  void read(void* device, DeviceTelemetry& out);

 private:
  NvmlDeviceFigures();
  struct Api;
  struct DeviceState;
  struct Impl;
  Impl* impl_;  // lives until exit, as NVML does
};

}  // namespace cudascope::cuda::detail
