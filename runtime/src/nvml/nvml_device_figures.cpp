#include "nvml_device_figures.h"

#include "nvml_library.h"
#include "../tool_loader.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cudascope::cuda::detail {
namespace {

// From nvml.h (no header on these machines); layouts stable across driver versions.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
using nvmlEventSet_t = void*;
using nvmlGpmSample_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kInsufficientSize = 7;

constexpr unsigned kFieldMemoryTemperature = 82;   // NVML_FI_DEV_MEMORY_TEMP
constexpr unsigned kFieldNvlinkLinkCount = 91;     // NVML_FI_DEV_NVLINK_LINK_COUNT
constexpr unsigned kFieldNvlinkDataTx = 138;       // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, KiB
constexpr unsigned kFieldNvlinkDataRx = 139;       // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, KiB
constexpr unsigned kScopeAllLinks = UINT_MAX;      // the throughput fields' sum over links

enum ValueType : int { kDouble = 0, kUInt = 1, kULong = 2, kULongLong = 3, kSLongLong = 4, kSInt = 5 };
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2)
constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

constexpr unsigned long long kEventXidCriticalError = 0x8;  // nvmlEventTypeXidCriticalError
struct nvmlEventData_t {  // _v2's layout; the base version's is its prefix
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};
struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
constexpr unsigned kGpmMetricMax = 333;  // NVML_GPM_METRIC_MAX of recent headers; we use 4
struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricMax];
};
constexpr unsigned kGpmSmUtil = 2, kGpmSmOccupancy = 3, kGpmAnyTensorUtil = 5, kGpmDramBwUtil = 10;
// GPM figures over a window shorter than this are noise: a read sooner repeats the last ones.
constexpr auto kGpmMinWindow = std::chrono::milliseconds(100);

template <typename Fn>
void resolve(void* library, Fn& fn, std::initializer_list<const char*> names) {
  if (void* symbol = tools::find_symbol(library, names)) fn = reinterpret_cast<Fn>(symbol);
}

std::optional<std::uint64_t> field_value(const nvmlFieldValue_t& field) {
  if (field.nvmlReturn != kSuccess) return std::nullopt;
  switch (field.valueType) {
    case kUInt: return field.value.uiVal;
    case kULong: return field.value.ulVal;
    case kULongLong: return field.value.ullVal;
    case kSInt: return field.value.siVal < 0 ? std::nullopt : std::optional<std::uint64_t>(field.value.siVal);
    case kSLongLong: return field.value.sllVal < 0 ? std::nullopt : std::optional<std::uint64_t>(field.value.sllVal);
    case kDouble: return field.value.dVal < 0 ? std::nullopt : std::optional<std::uint64_t>(field.value.dVal);
    default: return std::nullopt;
  }
}

}  // namespace

struct NvmlDeviceFigures::Api {
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*memory_info_v2)(nvmlDevice_t, nvmlMemory_v2_t*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned int) = nullptr;
  nvmlReturn_t (*process_utilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                      unsigned long long) = nullptr;
  nvmlReturn_t (*gpm_query_support)(nvmlDevice_t, nvmlGpmSupport_t*) = nullptr;
  nvmlReturn_t (*gpm_sample_alloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*gpm_sample_get)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*gpm_metrics_get)(nvmlGpmMetricsGet_t*) = nullptr;
};

// What is kept between reads of one device.
struct NvmlDeviceFigures::DeviceState {
  bool xid_tried = false;
  nvmlEventSet_t xid_events = nullptr;  // null: XID events not available here
  DeviceTelemetry::XidErrors xids;
  unsigned long long last_utilization_sample = 0;
  bool gpm_tried = false;
  nvmlGpmSample_t gpm_previous = nullptr, gpm_current = nullptr;  // null: no GPM here
  std::chrono::steady_clock::time_point gpm_previous_time{};
  bool gpm_have_previous = false;
  std::optional<double> gpm_last[4];
};

struct NvmlDeviceFigures::Impl {
  Api api;
  std::mutex mutex;
  std::map<void*, DeviceState> devices;

  void read_fields(void* device, DeviceTelemetry& out);
  void read_memory(void* device, DeviceTelemetry& out);
  void read_xids(void* device, DeviceState& state, DeviceTelemetry& out);
  void read_process_utilization(void* device, DeviceState& state, DeviceTelemetry& out);
  void read_gpm(void* device, DeviceState& state, DeviceTelemetry& out);
  bool gpm_window(DeviceState& state, std::optional<double> (&figures)[4]);
};

NvmlDeviceFigures& NvmlDeviceFigures::instance() {
  static NvmlDeviceFigures* figures = new NvmlDeviceFigures();  // NVML stays loaded until exit
  return *figures;
}

NvmlDeviceFigures::NvmlDeviceFigures() : impl_(nullptr) {
  NvmlLibrary::instance();  // loads and initialises NVML, or throws saying why
  void* library = tools::open_nvml();
  auto impl = std::make_unique<Impl>();
  Api& a = impl->api;
  resolve(library, a.field_values, {"nvmlDeviceGetFieldValues"});
  resolve(library, a.memory_info_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  resolve(library, a.event_set_create, {"nvmlEventSetCreate"});
  resolve(library, a.register_events, {"nvmlDeviceRegisterEvents"});
  resolve(library, a.event_set_wait, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  resolve(library, a.process_utilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(library, a.gpm_query_support, {"nvmlGpmQueryDeviceSupport"});
  resolve(library, a.gpm_sample_alloc, {"nvmlGpmSampleAlloc"});
  resolve(library, a.gpm_sample_get, {"nvmlGpmSampleGet"});
  resolve(library, a.gpm_metrics_get, {"nvmlGpmMetricsGet"});
  impl_ = impl.release();
}

void NvmlDeviceFigures::read(void* device, DeviceTelemetry& out) {
  std::lock_guard lock(impl_->mutex);
  DeviceState& state = impl_->devices[device];
  impl_->read_fields(device, out);
  impl_->read_memory(device, out);
  impl_->read_xids(device, state, out);
  impl_->read_process_utilization(device, state, out);
  impl_->read_gpm(device, state, out);
}

void NvmlDeviceFigures::Impl::read_fields(void* device, DeviceTelemetry& out) {
  if (api.field_values == nullptr) return;
  nvmlFieldValue_t fields[4] = {};
  fields[0].fieldId = kFieldMemoryTemperature;
  fields[1].fieldId = kFieldNvlinkLinkCount;
  fields[2].fieldId = kFieldNvlinkDataTx;
  fields[2].scopeId = kScopeAllLinks;
  fields[3].fieldId = kFieldNvlinkDataRx;
  fields[3].scopeId = kScopeAllLinks;
  if (api.field_values(device, 4, fields) != kSuccess) return;
  if (const auto celsius = field_value(fields[0])) out.memory_temperature_celsius = static_cast<int>(*celsius);
  // A device without NVLink reports no links (or no count): its throughput is absent, not 0.
  const auto links = field_value(fields[1]);
  if (!links || *links == 0) return;
  if (const auto kib = field_value(fields[2])) out.nvlink_tx_bytes = *kib * 1024;
  if (const auto kib = field_value(fields[3])) out.nvlink_rx_bytes = *kib * 1024;
}

void NvmlDeviceFigures::Impl::read_memory(void* device, DeviceTelemetry& out) {
  if (api.memory_info_v2 == nullptr) return;
  nvmlMemory_v2_t memory{};
  memory.version = kMemoryV2Version;
  if (api.memory_info_v2(device, &memory) == kSuccess) out.memory_reserved_bytes = memory.reserved;
}

void NvmlDeviceFigures::Impl::read_xids(void* device, DeviceState& state, DeviceTelemetry& out) {
  if (!state.xid_tried) {
    state.xid_tried = true;
    if (api.event_set_create == nullptr || api.register_events == nullptr || api.event_set_wait == nullptr) return;
    nvmlEventSet_t set = nullptr;
    if (api.event_set_create(&set) != kSuccess) return;
    if (api.register_events(device, kEventXidCriticalError, set) != kSuccess) return;  // the set stays: tiny
    state.xid_events = set;
  }
  if (state.xid_events == nullptr) return;
  // Drain what arrived since the last read without waiting; bounded so a storm of events
  // cannot hold a read.
  nvmlEventData_t data{};
  for (int i = 0; i < 1024 && api.event_set_wait(state.xid_events, &data, 0) == kSuccess; ++i) {
    if ((data.eventType & kEventXidCriticalError) == 0) continue;
    DeviceTelemetry::XidErrors& xids = state.xids;
    xids.last = data.eventData;
    const auto found = xids.by_code.find(data.eventData);
    if (found != xids.by_code.end()) ++found->second;
    else if (xids.by_code.size() < DeviceTelemetry::XidErrors::kMaxXidCodes) xids.by_code[data.eventData] = 1;
    else ++xids.other;
    data = {};
  }
  out.xid_errors = state.xids;
}

void NvmlDeviceFigures::Impl::read_process_utilization(void* device, DeviceState& state, DeviceTelemetry& out) {
  if (api.process_utilization == nullptr) return;
  unsigned int count = 0;
  nvmlReturn_t status = api.process_utilization(device, nullptr, &count, state.last_utilization_sample);
  if (status == kNotFound) {  // no process ran since the last read
    out.process_utilization.emplace();
    return;
  }
  if (status != kInsufficientSize && status != kSuccess) return;
  std::vector<nvmlProcessUtilizationSample_t> samples(std::max(count, 1u) + 8);
  count = static_cast<unsigned>(samples.size());
  status = api.process_utilization(device, samples.data(), &count, state.last_utilization_sample);
  if (status == kNotFound) {
    out.process_utilization.emplace();
    return;
  }
  if (status != kSuccess) return;
  // NVML may give several samples of one process: average them.
  struct Sum {
    unsigned long long sm = 0, memory = 0, samples = 0;
  };
  std::map<unsigned, Sum> per_pid;
  for (unsigned i = 0; i < count && i < samples.size(); ++i) {
    const auto& sample = samples[i];
    Sum& sum = per_pid[sample.pid];
    sum.sm += sample.smUtil;
    sum.memory += sample.memUtil;
    ++sum.samples;
    state.last_utilization_sample = std::max(state.last_utilization_sample, sample.timeStamp);
  }
  auto& list = out.process_utilization.emplace();
  for (const auto& [pid, sum] : per_pid) {
    list.push_back({pid, static_cast<int>(sum.sm / sum.samples), static_cast<int>(sum.memory / sum.samples)});
  }
}

// The GPM figures between the previous sample and a new one; false when GPM cannot give them.
bool NvmlDeviceFigures::Impl::gpm_window(DeviceState& state, std::optional<double> (&figures)[4]) {
  auto request = std::make_unique<nvmlGpmMetricsGet_t>();
  request->version = 1;  // NVML_GPM_METRICS_GET_VERSION
  request->numMetrics = 4;
  request->sample1 = state.gpm_previous;
  request->sample2 = state.gpm_current;
  const unsigned ids[4] = {kGpmSmUtil, kGpmSmOccupancy, kGpmAnyTensorUtil, kGpmDramBwUtil};
  for (unsigned i = 0; i < 4; ++i) request->metrics[i].metricId = ids[i];
  if (api.gpm_metrics_get(request.get()) != kSuccess) return false;
  for (unsigned i = 0; i < 4; ++i) {
    figures[i].reset();
    if (request->metrics[i].nvmlReturn == kSuccess) figures[i] = request->metrics[i].value;
  }
  return true;
}

void NvmlDeviceFigures::Impl::read_gpm(void* device, DeviceState& state, DeviceTelemetry& out) {
  if (!state.gpm_tried) {
    state.gpm_tried = true;
    if (api.gpm_query_support == nullptr || api.gpm_sample_alloc == nullptr || api.gpm_sample_get == nullptr ||
        api.gpm_metrics_get == nullptr) {
      return;
    }
    nvmlGpmSupport_t support{1, 0};  // NVML_GPM_SUPPORT_VERSION
    if (api.gpm_query_support(device, &support) != kSuccess || support.isSupportedDevice == 0) return;
    if (api.gpm_sample_alloc(&state.gpm_previous) != kSuccess || api.gpm_sample_alloc(&state.gpm_current) != kSuccess) {
      state.gpm_previous = state.gpm_current = nullptr;  // a sample leaked at most: once per device
      return;
    }
  }
  if (state.gpm_current == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (!state.gpm_have_previous) {
    // The first read opens its own window, so one-shot readers (`cudascope metrics`) get figures.
    if (api.gpm_sample_get(device, state.gpm_previous) != kSuccess) return;
    state.gpm_previous_time = now;
    state.gpm_have_previous = true;
    std::this_thread::sleep_for(kGpmMinWindow);
  } else if (now - state.gpm_previous_time < kGpmMinWindow) {
    out.gpm_sm_active_percent = state.gpm_last[0];
    out.gpm_sm_occupancy_percent = state.gpm_last[1];
    out.gpm_tensor_active_percent = state.gpm_last[2];
    out.gpm_dram_bandwidth_percent = state.gpm_last[3];
    return;
  }
  if (api.gpm_sample_get(device, state.gpm_current) != kSuccess) return;
  std::optional<double> figures[4];
  const bool computed = gpm_window(state, figures);
  std::swap(state.gpm_previous, state.gpm_current);
  state.gpm_previous_time = std::chrono::steady_clock::now();
  if (!computed) return;
  std::copy(std::begin(figures), std::end(figures), std::begin(state.gpm_last));
  out.gpm_sm_active_percent = figures[0];
  out.gpm_sm_occupancy_percent = figures[1];
  out.gpm_tensor_active_percent = figures[2];
  out.gpm_dram_bandwidth_percent = figures[3];
}

}  // namespace cudascope::cuda::detail
