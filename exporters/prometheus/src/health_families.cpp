#include "health_families.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <utility>

namespace cudascope::metrics::detail {
namespace {

using prometheus::MetricType;

// NVML's clock event (throttle) reason bits, one 0/1 series each.
constexpr std::pair<std::uint64_t, const char*> kClockEventReasons[] = {
    {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},  {0x100, "display_clock_setting"},
};

// Says once per device and figure that NVML left it out.
void say_absent(int device, const char* figure) {
  static std::mutex mutex;
  static std::set<std::pair<int, std::string>> said;
  std::lock_guard lock(mutex);
  if (!said.insert({device, figure}).second) return;
  std::fprintf(stderr, "cudascope: device %d: NVML does not report %s here (driver or device lacks it); left out\n",
               device, figure);
}

class HealthWriter {
 public:
  HealthWriter(Families& families, int device, const Labels& base, bool log_absent)
      : families_(families), device_(device), base_(base), log_absent_(log_absent) {}

  template <typename T>
  void gauge(const char* name, const char* help, const std::optional<T>& value, double scale, const char* what,
             std::initializer_list<prometheus::ClientMetric::Label> extra = {}) {
    sample(name, help, MetricType::Gauge, value, scale, what, extra);
  }
  template <typename T>
  void counter(const char* name, const char* help, const std::optional<T>& value, double scale, const char* what,
               std::initializer_list<prometheus::ClientMetric::Label> extra = {}) {
    sample(name, help, MetricType::Counter, value, scale, what, extra);
  }
  void absent(const char* what) {
    if (log_absent_) say_absent(device_, what);
  }
  Labels labels(std::initializer_list<prometheus::ClientMetric::Label> extra) const {
    Labels all = base_;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }
  Families& families() { return families_; }

 private:
  template <typename T>
  void sample(const char* name, const char* help, MetricType type, const std::optional<T>& value, double scale,
              const char* what, std::initializer_list<prometheus::ClientMetric::Label> extra) {
    if (!value) return absent(what);
    add(families_, name, help, type, labels(extra), static_cast<double>(*value) * scale);
  }
  Families& families_;
  int device_;
  const Labels& base_;
  bool log_absent_;
};

// torch.cuda's figures and the device's memory.
void add_basic(HealthWriter& out, const cuda::DeviceTelemetry& h) {
  out.gauge("cudascope_gpu_utilization_ratio", "Share of the last sample period a kernel was running.",
            h.utilization_percent, 0.01, "utilization");
  out.gauge("cudascope_gpu_memory_utilization_ratio", "Share of the last sample period device memory was busy.",
            h.memory_utilization_percent, 0.01, "memory utilization");
  out.gauge("cudascope_gpu_temperature_celsius", "GPU temperature.", h.temperature_celsius, 1.0, "the temperature");
  out.gauge("cudascope_gpu_power_watts", "Power draw.", h.power_milliwatts, 1e-3, "the power draw");
  out.gauge("cudascope_gpu_sm_clock_hertz", "SM clock.", h.sm_clock_mhz, 1e6, "the SM clock");
  out.counter("cudascope_gpu_energy_joules_total", "Energy used since the driver loaded.", h.energy_millijoules, 1e-3,
              "the energy counter");
  const auto bytes = [](std::uint64_t value) { return std::optional<std::uint64_t>(value); };
  out.gauge("cudascope_gpu_memory_used_bytes", "Device memory in use by all processes.", bytes(h.memory_used_bytes),
            1.0, "used memory");
  out.gauge("cudascope_gpu_memory_total_bytes", "Device memory.", bytes(h.memory_total_bytes), 1.0, "total memory");
}

// dcgm-exporter's default set beyond torch.cuda's figures.
void add_dcgm_defaults(HealthWriter& out, const cuda::DeviceTelemetry& h) {
  out.gauge("cudascope_gpu_memory_clock_hertz", "Memory clock.", h.memory_clock_mhz, 1e6, "the memory clock");
  out.gauge("cudascope_gpu_memory_temperature_celsius", "Device memory (HBM) temperature.",
            h.memory_temperature_celsius, 1.0, "the memory temperature");
  out.gauge("cudascope_gpu_memory_reserved_bytes", "Device memory the driver and firmware set aside.",
            h.memory_reserved_bytes, 1.0, "reserved memory");
  out.gauge("cudascope_gpu_power_limit_watts", "Enforced power limit.", h.power_limit_milliwatts, 1e-3, "the power limit");
  if (h.clock_event_reasons) {
    for (const auto& [bit, reason] : kClockEventReasons) {
      const std::optional<int> active = (*h.clock_event_reasons & bit) != 0 ? 1 : 0;
      out.gauge("cudascope_gpu_clock_event_active", "1 while this reason holds the clocks down (NVML clock event reasons).",
                active, 1.0, "clock event reasons", {{"reason", reason}});
    }
  } else {
    out.absent("clock event reasons");
  }
  const char* pcie_help = "PCIe throughput over NVML's last ~20 ms sample.";
  out.gauge("cudascope_gpu_pcie_throughput_bytes_per_second", pcie_help, h.pcie_tx_bytes_per_second, 1.0,
            "PCIe throughput", {{"direction", "tx"}});
  out.gauge("cudascope_gpu_pcie_throughput_bytes_per_second", pcie_help, h.pcie_rx_bytes_per_second, 1.0,
            "PCIe throughput", {{"direction", "rx"}});
  out.counter("cudascope_gpu_pcie_replays_total", "PCIe replays since the driver loaded.", h.pcie_replays, 1.0,
              "PCIe replays");
  const char* nvlink_help = "NVLink data bytes (without protocol overhead) over all links since the driver loaded.";
  out.counter("cudascope_gpu_nvlink_bytes_total", nvlink_help, h.nvlink_tx_bytes, 1.0, "NVLink throughput",
              {{"direction", "tx"}});
  out.counter("cudascope_gpu_nvlink_bytes_total", nvlink_help, h.nvlink_rx_bytes, 1.0, "NVLink throughput",
              {{"direction", "rx"}});
  out.gauge("cudascope_gpu_encoder_utilization_ratio", "Video encoder utilization.", h.encoder_utilization_percent, 0.01,
            "encoder utilization");
  out.gauge("cudascope_gpu_decoder_utilization_ratio", "Video decoder utilization.", h.decoder_utilization_percent, 0.01,
            "decoder utilization");
  const char* ecc_help = "ECC errors over the device's life.";
  out.counter("cudascope_gpu_ecc_errors_total", ecc_help, h.ecc_corrected_errors, 1.0, "ECC errors",
              {{"type", "corrected"}});
  out.counter("cudascope_gpu_ecc_errors_total", ecc_help, h.ecc_uncorrected_errors, 1.0, "ECC errors",
              {{"type", "uncorrected"}});
  const char* rows_help = "Memory rows remapped, by the kind of error that caused it.";
  out.gauge("cudascope_gpu_remapped_rows", rows_help, h.remapped_rows_correctable, 1.0, "remapped rows",
            {{"cause", "correctable"}});
  out.gauge("cudascope_gpu_remapped_rows", rows_help, h.remapped_rows_uncorrectable, 1.0, "remapped rows",
            {{"cause", "uncorrectable"}});
  out.gauge("cudascope_gpu_row_remap_pending", "1 when a row remap waits for the next GPU reset.", h.row_remap_pending,
            1.0, "remapped rows");
  out.gauge("cudascope_gpu_row_remap_failed", "1 when a row remap has failed.", h.row_remap_failed, 1.0,
            "remapped rows");
}

// XID errors: the last code as dcgm-exporter shows it, and a counter per code (bounded).
void add_xids(HealthWriter& out, const cuda::DeviceTelemetry& h) {
  if (!h.xid_errors) return out.absent("XID error events");
  out.gauge("cudascope_gpu_last_xid", "The most recent XID error code since the exporter started (0: none).",
            std::optional<std::uint64_t>(h.xid_errors->last), 1.0, "XID error events");
  const char* help = "XID errors since the exporter started, by XID code (at most 32 codes, then xid=\"other\").";
  for (const auto& [code, count] : h.xid_errors->by_code) {
    add(out.families(), "cudascope_gpu_xid_errors_total", help, MetricType::Counter,
        out.labels({{"xid", std::to_string(code)}}), static_cast<double>(count));
  }
  if (h.xid_errors->other > 0) {
    add(out.families(), "cudascope_gpu_xid_errors_total", help, MetricType::Counter, out.labels({{"xid", "other"}}),
        static_cast<double>(h.xid_errors->other));
  }
}

// GPM (Hopper): dcgm-exporter's DCGM_FI_PROF_* figures, which it ships turned off.
void add_gpm(HealthWriter& out, const cuda::DeviceTelemetry& h) {
  out.gauge("cudascope_gpu_sm_active_ratio", "Share of SMs with a warp resident, over the last sampling window (GPM).",
            h.gpm_sm_active_percent, 0.01, "GPM figures (Hopper and later)");
  out.gauge("cudascope_gpu_sm_occupancy_ratio",
            "Warps resident against the SMs' maximum, over the last sampling window (GPM).", h.gpm_sm_occupancy_percent,
            0.01, "GPM figures (Hopper and later)");
  out.gauge("cudascope_gpu_tensor_active_ratio",
            "Share of cycles the tensor pipes (any kind) were busy, over the last sampling window (GPM).",
            h.gpm_tensor_active_percent, 0.01, "GPM figures (Hopper and later)");
  out.gauge("cudascope_gpu_dram_active_ratio",
            "DRAM bandwidth used against the peak, over the last sampling window (GPM).", h.gpm_dram_bandwidth_percent,
            0.01, "GPM figures (Hopper and later)");
}

// Per process (one series per process on the device: bounded by what fits on it).
void add_processes(HealthWriter& out, const cuda::DeviceTelemetry& h) {
  add(out.families(), "cudascope_gpu_processes", "Processes using the device.", MetricType::Gauge, out.labels({}),
      static_cast<double>(h.processes.size()));
  for (const cuda::GpuProcess& process : h.processes) {
    add(out.families(), "cudascope_gpu_process_memory_bytes", "Device memory a process uses (NVML's process query).",
        MetricType::Gauge, out.labels({{"pid", std::to_string(process.pid)}}),
        static_cast<double>(process.used_memory_bytes));
  }
  if (!h.process_utilization) return out.absent("per-process utilization");
  for (const auto& process : *h.process_utilization) {
    add(out.families(), "cudascope_gpu_process_utilization_ratio",
        "Share of NVML's recent samples in which the process ran kernels (processes sampled since the last reading).",
        MetricType::Gauge, out.labels({{"pid", std::to_string(process.pid)}}), process.sm_percent / 100.0);
  }
}

}  // namespace

void add_health(Families& families, int device, const cuda::DeviceTelemetry& health, const Labels& base,
                bool log_absent) {
  HealthWriter out(families, device, base, log_absent);
  add_basic(out, health);
  add_dcgm_defaults(out, health);
  add(families, "cudascope_gpu_memory_free_bytes", "Device memory not in use by any process.", MetricType::Gauge, base,
      static_cast<double>(health.memory_total_bytes - std::min(health.memory_used_bytes, health.memory_total_bytes)));
  add_xids(out, health);
  add_gpm(out, health);
  add_processes(out, health);
}

}  // namespace cudascope::metrics::detail
