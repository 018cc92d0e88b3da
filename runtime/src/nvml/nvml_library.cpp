#include "nvml_library.h"

#include "../check.h"
#include "../tool_loader.h"

#include <mutex>

namespace cudascope::cuda::detail {
namespace {

// From nvml.h, whose layout is stable across driver versions.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlNotSupported = 3;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlPcieTx = 0, kNvmlPcieRx = 1;                       // nvmlPcieUtilCounter_t
constexpr int kNvmlErrorCorrected = 0, kNvmlErrorUncorrected = 1;      // nvmlMemoryErrorType_t
constexpr int kNvmlAggregateEcc = 1;                                   // nvmlEccCounterType_t
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct nvmlProcessInfo_v2_t {  // also _v3's layout
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

}  // namespace

struct NvmlLibrary::Api {
  nvmlReturn_t (*init)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*handle_by_uuid)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*utilization_rates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*total_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  // Compute processes: _v3 and _v2 take nvmlProcessInfo_v2_t, the base version _v1.
  nvmlReturn_t (*processes_v2)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*) = nullptr;
  nvmlReturn_t (*processes_v1)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*) = nullptr;
  // Optional: the figures beyond torch.cuda (read_extra_figures).
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*pcie_throughput)(nvmlDevice_t, int, unsigned int*) = nullptr;  // KB/s
  nvmlReturn_t (*pcie_replays)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*encoder_utilization)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*decoder_utilization)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*total_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*, unsigned int*) = nullptr;
};

namespace {

template <typename Fn>
bool resolve_first(void* library, Fn& fn, std::initializer_list<const char*> names) {
  void* symbol = tools::find_symbol(library, names);
  if (symbol != nullptr) fn = reinterpret_cast<Fn>(symbol);
  return symbol != nullptr;
}

// Calls an NVML getter of one unsigned figure; empty when the device does not report it.
template <typename Call>
std::optional<int> figure(Call&& call) {
  unsigned int value = 0;
  if (call(&value) != kNvmlSuccess) return std::nullopt;
  return static_cast<int>(value);
}

}  // namespace

NvmlLibrary& NvmlLibrary::instance() {
  static NvmlLibrary* library = new NvmlLibrary();  // NVML stays loaded until exit
  return *library;
}

NvmlLibrary::NvmlLibrary() {
  void* library = tools::open_nvml();
  auto* api = new Api();
  const bool found = resolve_first(library, api->init, {"nvmlInit_v2", "nvmlInit"}) &&
                     resolve_first(library, api->error_string, {"nvmlErrorString"}) &&
                     resolve_first(library, api->handle_by_uuid, {"nvmlDeviceGetHandleByUUID"}) &&
                     resolve_first(library, api->utilization_rates, {"nvmlDeviceGetUtilizationRates"}) &&
                     resolve_first(library, api->temperature, {"nvmlDeviceGetTemperature"}) &&
                     resolve_first(library, api->power_usage, {"nvmlDeviceGetPowerUsage"}) &&
                     resolve_first(library, api->clock_info, {"nvmlDeviceGetClockInfo"});
  CUDASCOPE_CHECK(found, error_code::kNotSupported, "dlsym(libnvidia-ml.so.1)",
                  "the NVML library lacks an entry point cudascope needs; the driver is too old");
  resolve_first(library, api->total_energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  if (!resolve_first(library, api->processes_v2,
                     {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"})) {
    resolve_first(library, api->processes_v1, {"nvmlDeviceGetComputeRunningProcesses"});
  }
  resolve_first(library, api->power_limit, {"nvmlDeviceGetEnforcedPowerLimit"});
  resolve_first(library, api->clock_event_reasons,
                {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve_first(library, api->pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
  resolve_first(library, api->pcie_replays, {"nvmlDeviceGetPcieReplayCounter"});
  resolve_first(library, api->encoder_utilization, {"nvmlDeviceGetEncoderUtilization"});
  resolve_first(library, api->decoder_utilization, {"nvmlDeviceGetDecoderUtilization"});
  resolve_first(library, api->total_ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  resolve_first(library, api->remapped_rows, {"nvmlDeviceGetRemappedRows"});
  const nvmlReturn_t status = api->init();
  CUDASCOPE_CHECK(status == kNvmlSuccess, error_code::kInitializationError, "nvmlInit_v2", api->error_string(status));
  api_ = api;
}

void* NvmlLibrary::device_by_uuid(const std::string& uuid) {
  nvmlDevice_t device = nullptr;
  const nvmlReturn_t status = api_->handle_by_uuid(uuid.c_str(), &device);
  CUDASCOPE_CHECK(status == kNvmlSuccess, error_code::kInvalidDevice, "nvmlDeviceGetHandleByUUID",
                  uuid + ": " + api_->error_string(status));
  return device;
}

std::optional<int> NvmlLibrary::utilization(void* device, bool memory) {
  nvmlUtilization_t rates{};
  if (api_->utilization_rates(device, &rates) != kNvmlSuccess) return std::nullopt;
  return static_cast<int>(memory ? rates.memory : rates.gpu);
}

std::optional<int> NvmlLibrary::temperature(void* device) {
  return figure([&](unsigned int* value) { return api_->temperature(device, kNvmlTemperatureGpu, value); });
}

std::optional<int> NvmlLibrary::power_milliwatts(void* device) {
  return figure([&](unsigned int* value) { return api_->power_usage(device, value); });
}

std::optional<int> NvmlLibrary::sm_clock_mhz(void* device) {
  return figure([&](unsigned int* value) { return api_->clock_info(device, kNvmlClockSm, value); });
}

std::optional<std::uint64_t> NvmlLibrary::energy_millijoules(void* device) {
  unsigned long long value = 0;
  if (api_->total_energy == nullptr || api_->total_energy(device, &value) != kNvmlSuccess) return std::nullopt;
  return value;
}

std::vector<GpuProcess> NvmlLibrary::processes(void* device) {
  std::vector<GpuProcess> out;
  // The list can grow between the sizing call and the filling call: retry a few times.
  for (unsigned int capacity = 16; capacity <= 4096; capacity *= 4) {
    unsigned int count = capacity;
    nvmlReturn_t status = kNvmlNotSupported;
    if (api_->processes_v2 != nullptr) {
      std::vector<nvmlProcessInfo_v2_t> infos(capacity);
      status = api_->processes_v2(device, &count, infos.data());
      if (status == kNvmlSuccess) {
        for (unsigned int i = 0; i < count; ++i) out.push_back({infos[i].pid, infos[i].usedGpuMemory});
      }
    } else if (api_->processes_v1 != nullptr) {
      std::vector<nvmlProcessInfo_v1_t> infos(capacity);
      status = api_->processes_v1(device, &count, infos.data());
      if (status == kNvmlSuccess) {
        for (unsigned int i = 0; i < count; ++i) out.push_back({infos[i].pid, infos[i].usedGpuMemory});
      }
    }
    if (status != kNvmlInsufficientSize) break;
  }
  return out;
}

void NvmlLibrary::read_extra_figures(void* device, DeviceTelemetry& out) {
  const Api& a = *api_;
  out.memory_clock_mhz = figure([&](unsigned int* v) { return a.clock_info(device, kNvmlClockMem, v); });
  unsigned int u = 0, period = 0, pending = 0, failed = 0, uncorrectable = 0;
  unsigned long long ull = 0;
  if (a.power_limit && a.power_limit(device, &u) == kNvmlSuccess) out.power_limit_milliwatts = static_cast<int>(u);
  if (a.clock_event_reasons && a.clock_event_reasons(device, &ull) == kNvmlSuccess) out.clock_event_reasons = ull;
  if (a.pcie_throughput && a.pcie_throughput(device, kNvmlPcieTx, &u) == kNvmlSuccess) {
    out.pcie_tx_bytes_per_second = std::uint64_t{u} * 1024;
  }
  if (a.pcie_throughput && a.pcie_throughput(device, kNvmlPcieRx, &u) == kNvmlSuccess) {
    out.pcie_rx_bytes_per_second = std::uint64_t{u} * 1024;
  }
  if (a.pcie_replays && a.pcie_replays(device, &u) == kNvmlSuccess) out.pcie_replays = u;
  if (a.encoder_utilization && a.encoder_utilization(device, &u, &period) == kNvmlSuccess) {
    out.encoder_utilization_percent = static_cast<int>(u);
  }
  if (a.decoder_utilization && a.decoder_utilization(device, &u, &period) == kNvmlSuccess) {
    out.decoder_utilization_percent = static_cast<int>(u);
  }
  if (a.total_ecc_errors && a.total_ecc_errors(device, kNvmlErrorCorrected, kNvmlAggregateEcc, &ull) == kNvmlSuccess) {
    out.ecc_corrected_errors = ull;
  }
  if (a.total_ecc_errors && a.total_ecc_errors(device, kNvmlErrorUncorrected, kNvmlAggregateEcc, &ull) == kNvmlSuccess) {
    out.ecc_uncorrected_errors = ull;
  }
  if (a.remapped_rows && a.remapped_rows(device, &u, &uncorrectable, &pending, &failed) == kNvmlSuccess) {
    out.remapped_rows_correctable = static_cast<int>(u);
    out.remapped_rows_uncorrectable = static_cast<int>(uncorrectable);
    out.row_remap_pending = pending != 0;
    out.row_remap_failed = failed != 0;
  }
}

}  // namespace cudascope::cuda::detail
