// Device health figures: the backend's, with torch.cuda's names.
#include <cudascope/cuda/device.h>
#include <cudascope/cuda/telemetry.h>

#include "check.h"
#include "runtime_state.h"

#include <cstdio>

namespace cudascope::cuda {
namespace {

// One figure of the device's telemetry; cuda::Error (not supported) when it is not reported.
template <typename T>
T required_figure(int device, std::optional<T> DeviceTelemetry::*field, const char* what) {
  const int index = detail::resolve_device(device);
  const std::optional<T> figure = detail::lazy_backend().telemetry(index).*field;
  CUDASCOPE_CHECK(figure.has_value(), error_code::kNotSupported, what,
                  std::string(what) + " is not reported for device " + std::to_string(index));
  return *figure;
}

}  // namespace

DeviceTelemetry device_telemetry(int device) {
  return detail::lazy_backend().telemetry(detail::resolve_device(device));
}

int utilization(int device) { return required_figure(device, &DeviceTelemetry::utilization_percent, "utilization"); }
int memory_usage(int device) {
  return required_figure(device, &DeviceTelemetry::memory_utilization_percent, "memory_usage");
}
int temperature(int device) { return required_figure(device, &DeviceTelemetry::temperature_celsius, "temperature"); }
int power_draw(int device) { return required_figure(device, &DeviceTelemetry::power_milliwatts, "power_draw"); }
int clock_rate(int device) { return required_figure(device, &DeviceTelemetry::sm_clock_mhz, "clock_rate"); }

std::vector<GpuProcess> gpu_processes(int device) { return device_telemetry(device).processes; }

std::string list_gpu_processes(int device) {
  const int index = detail::resolve_device(device);
  std::string text = "GPU:" + std::to_string(index);
  const std::vector<GpuProcess> processes = gpu_processes(index);
  if (processes.empty()) return text + "\nno processes are running";
  for (const GpuProcess& process : processes) {
    char line[96];
    std::snprintf(line, sizeof line, "\nprocess %10u uses %12.3f MB GPU memory", process.pid,
                  static_cast<double>(process.used_memory_bytes) / (1024.0 * 1024.0));
    text += line;
  }
  return text;
}

}  // namespace cudascope::cuda
