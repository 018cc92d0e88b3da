#pragma once
// Device health, as torch.cuda's NVML-backed functions: utilization, memory_usage,
// temperature, power_draw, clock_rate, list_gpu_processes. On the cuda backend the figures
// come from NVML, loaded with dlopen at first use (a clear cuda::Error when it is absent or
// a figure is not supported); the sim backend reports its simulated device's figures.
// Thread-safe.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cudascope::cuda {

// Percent of the last sample period during which a kernel ran (nvmlDeviceGetUtilizationRates.gpu).
int utilization(int device = -1);
// Percent of the last sample period during which device memory was read or written.
int memory_usage(int device = -1);
// GPU temperature in degrees Celsius.
int temperature(int device = -1);
// Power draw in milliwatts.
int power_draw(int device = -1);
// SM clock in MHz.
int clock_rate(int device = -1);

struct GpuProcess {
  unsigned pid = 0;
  std::uint64_t used_memory_bytes = 0;
};
std::vector<GpuProcess> gpu_processes(int device = -1);
// torch.cuda.list_gpu_processes: "GPU:0\nprocess 1234 uses 512.000 MB GPU memory" lines.
std::string list_gpu_processes(int device = -1);

// Everything above at once, for exporters; a figure the device does not report is empty.
struct DeviceTelemetry {
  std::optional<int> utilization_percent;
  std::optional<int> memory_utilization_percent;
  std::optional<int> temperature_celsius;
  std::optional<int> power_milliwatts;
  std::optional<int> sm_clock_mhz;
  std::optional<std::uint64_t> energy_millijoules;  // since the driver loaded
  std::uint64_t memory_used_bytes = 0;
  std::uint64_t memory_total_bytes = 0;
  std::vector<GpuProcess> processes;
  // Beyond torch.cuda, for exporters (dcgm-exporter's default set); empty where the device
  // or the driver does not report the figure.
  std::optional<int> memory_clock_mhz;
  std::optional<int> power_limit_milliwatts;  // enforced limit
  std::optional<std::uint64_t> clock_event_reasons;  // NVML's bit mask of why clocks are held down
  std::optional<std::uint64_t> pcie_tx_bytes_per_second, pcie_rx_bytes_per_second;  // NVML's ~20 ms sample
  std::optional<std::uint64_t> pcie_replays;  // since the driver loaded
  std::optional<int> encoder_utilization_percent, decoder_utilization_percent;
  std::optional<std::uint64_t> ecc_corrected_errors, ecc_uncorrected_errors;  // over the device's life
  std::optional<int> remapped_rows_correctable, remapped_rows_uncorrectable;
  std::optional<bool> row_remap_pending, row_remap_failed;
  // The rest of dcgm-exporter's default set, and Hopper's GPM figures.
  std::optional<int> memory_temperature_celsius;
  std::optional<std::uint64_t> memory_reserved_bytes;  // set aside by the driver and firmware
  // NVLink data bytes (payload, without protocol overhead) summed over the links since the
  // driver loaded; empty on a device without NVLink.
  std::optional<std::uint64_t> nvlink_tx_bytes, nvlink_rx_bytes;
  // XID errors (NVML's critical error events) seen since this process first read the
  // device's figures, by XID code; at most kMaxXidCodes codes, later new codes count in
  // `other`. `last` is the most recent code (0 before the first).
  struct XidErrors {
    static constexpr std::size_t kMaxXidCodes = 32;
    std::map<std::uint64_t, std::uint64_t> by_code;
    std::uint64_t other = 0;
    std::uint64_t last = 0;
  };
  std::optional<XidErrors> xid_errors;
  // Per process: percent of NVML's recent samples (since the previous read, at most its
  // buffer) during which the process ran kernels (SM) and used device memory.
  struct ProcessUtilization {
    unsigned pid = 0;
    int sm_percent = 0;
    int memory_percent = 0;
  };
  std::optional<std::vector<ProcessUtilization>> process_utilization;
  // GPM (Hopper and later), percent over the window since the previous read of this device
  // (the first read waits 100 ms for its window): share of SMs busy, warps resident against
  // the maximum, tensor pipes busy (any kind), DRAM bandwidth used against peak.
  std::optional<double> gpm_sm_active_percent, gpm_sm_occupancy_percent, gpm_tensor_active_percent,
      gpm_dram_bandwidth_percent;
};
DeviceTelemetry device_telemetry(int device = -1);

}  // namespace cudascope::cuda
