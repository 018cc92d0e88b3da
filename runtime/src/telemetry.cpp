// Device health figures: the backend's, with torch.cuda's names.
#include <cudascope/cuda/device.h>
#include <cudascope/cuda/telemetry.h>

#include "check.h"
#include "runtime_state.h"

#include <cstdio>

namespace cudascope::cuda {
namespace {

template <typename T>
T required(const std::optional<T>& figure, const char* what, int device) {
  CUDASCOPE_CHECK(figure.has_value(), error_code::kNotSupported, what,
                  std::string(what) + " is not reported for device " + std::to_string(device));
  return *figure;
}

DeviceTelemetry telemetry_of(int device, int& index) {
  index = detail::resolve_device(device);
  return detail::lazy_backend().telemetry(index);
}

}  // namespace

DeviceTelemetry device_telemetry(int device) {
  int index = 0;
  return telemetry_of(device, index);
}

int utilization(int device) {
  int index = 0;
  return required(telemetry_of(device, index).utilization_percent, "utilization", index);
}

int memory_usage(int device) {
  int index = 0;
  return required(telemetry_of(device, index).memory_utilization_percent, "memory_usage", index);
}

int temperature(int device) {
  int index = 0;
  return required(telemetry_of(device, index).temperature_celsius, "temperature", index);
}

int power_draw(int device) {
  int index = 0;
  return required(telemetry_of(device, index).power_milliwatts, "power_draw", index);
}

int clock_rate(int device) {
  int index = 0;
  return required(telemetry_of(device, index).sm_clock_mhz, "clock_rate", index);
}

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
