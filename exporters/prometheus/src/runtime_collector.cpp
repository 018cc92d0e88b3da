#include "runtime_collector.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/telemetry.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <map>
#include <set>
#include <utility>
#include <string>

namespace cudascope::metrics::detail {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Families in a fixed order, each filled as devices are visited.
class Families {
 public:
  MetricFamily& get(const std::string& name, const std::string& help, MetricType type) {
    auto found = index_.find(name);
    if (found != index_.end()) return families_[found->second];
    index_.emplace(name, families_.size());
    families_.push_back(MetricFamily{name, help, type, {}});
    return families_.back();
  }
  std::vector<MetricFamily> take() { return std::move(families_); }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<MetricFamily> families_;
};

void add(Families& families, const std::string& name, const std::string& help, MetricType type,
         std::vector<prometheus::ClientMetric::Label> labels, double value) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (type == MetricType::Counter) metric.counter.value = value;
  else metric.gauge.value = value;
  families.get(name, help, type).metric.push_back(std::move(metric));
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

namespace {

constexpr const char* kPoolLabels[] = {"all", "small", "large"};

// Allocator figures exported per pool: which counter, which of its fields, metric, help, type.
using PerPool = cuda::AllocatorStats::PerPool;
struct PoolFigure {
  PerPool cuda::AllocatorStats::*counter;
  std::int64_t cuda::MemoryStat::*field;
  const char* metric;
  const char* help;
  MetricType type;
};
using S = cuda::AllocatorStats;
using M = cuda::MemoryStat;
const PoolFigure kPoolFigures[] = {
    {&S::allocated_bytes, &M::current, "cudascope_memory_allocated_bytes", "Bytes in allocated blocks.", MetricType::Gauge},
    {&S::allocated_bytes, &M::peak, "cudascope_memory_allocated_peak_bytes", "Peak of allocated bytes since the last reset.",
     MetricType::Gauge},
    {&S::reserved_bytes, &M::current, "cudascope_memory_reserved_bytes", "Bytes in segments reserved from the device.",
     MetricType::Gauge},
    {&S::reserved_bytes, &M::peak, "cudascope_memory_reserved_peak_bytes", "Peak of reserved bytes since the last reset.",
     MetricType::Gauge},
    {&S::active_bytes, &M::current, "cudascope_memory_active_bytes", "Bytes in active blocks (allocated or pending free).",
     MetricType::Gauge},
    {&S::inactive_split_bytes, &M::current, "cudascope_memory_inactive_split_bytes",
     "Bytes in inactive blocks that are split off a larger block.", MetricType::Gauge},
    {&S::requested_bytes, &M::current, "cudascope_memory_requested_bytes",
     "Bytes requested by callers (before the allocator's rounding).", MetricType::Gauge},
    {&S::allocation, &M::current, "cudascope_memory_blocks", "Allocated blocks.", MetricType::Gauge},
    {&S::segment, &M::current, "cudascope_memory_segments", "Reserved segments.", MetricType::Gauge},
    // Counters are named for the action (alloc, free), never for a gauge's base name, so
    // cudascope_memory_allocated_bytes (gauge) has no cudascope_memory_allocated_bytes_total twin.
    {&S::allocated_bytes, &M::allocated, "cudascope_memory_alloc_bytes_total", "Bytes allocated since the last reset.",
     MetricType::Counter},
    {&S::allocated_bytes, &M::freed, "cudascope_memory_free_bytes_total", "Bytes freed since the last reset.",
     MetricType::Counter},
    {&S::allocation, &M::allocated, "cudascope_memory_allocations_total", "Allocations since the last reset.",
     MetricType::Counter},
    {&S::allocation, &M::freed, "cudascope_memory_frees_total", "Frees since the last reset.", MetricType::Counter},
    {&S::segment, &M::allocated, "cudascope_memory_segment_allocations_total",
     "Segments reserved from the device since the last reset.", MetricType::Counter},
    {&S::segment, &M::freed, "cudascope_memory_segment_frees_total", "Segments released to the device since the last reset.",
     MetricType::Counter},
};

// Allocator figures without a pool.
struct DeviceFigure {
  std::int64_t cuda::AllocatorStats::*value;
  const char* metric;
  const char* help;
};
const DeviceFigure kDeviceCounters[] = {
    {&S::num_ooms, "cudascope_memory_oom_total", "Out-of-memory errors raised."},
    {&S::num_alloc_retries, "cudascope_memory_alloc_retries_total",
     "Device allocations that failed and were retried after freeing the cache."},
    {&S::num_device_alloc, "cudascope_memory_device_allocs_total", "Device memory allocations (cudaMalloc and maps)."},
    {&S::num_device_free, "cudascope_memory_device_frees_total", "Device memory releases (cudaFree and unmaps)."},
    {&S::num_sync_all_streams, "cudascope_memory_sync_all_streams_total",
     "Times the allocator synchronised every stream (to release cached memory)."},
};

// External fragmentation as analysis::Figures defines it for snapshots: the share of the
// cached (inactive) bytes outside the largest free block, 0 when nothing is cached. 0 means
// one request of all the cached bytes would fit; near 1, the cache is in small pieces.
double fragmentation(const cuda::AllocatorStats& stats) {
  const std::int64_t inactive = stats.reserved_bytes[cuda::kPoolAll].current - stats.active_bytes[cuda::kPoolAll].current;
  if (inactive <= 0) return 0.0;
  return 1.0 - static_cast<double>(stats.largest_free_block) / static_cast<double>(inactive);
}

void collect_allocator(Families& families, const MetricsOptions& options, int device, const cuda::AllocatorStats& stats,
                       const std::vector<prometheus::ClientMetric::Label>& base) {
  for (const PoolFigure& figure : kPoolFigures) {
    for (int pool = 0; pool < 3; ++pool) {
      auto labels = base;
      labels.push_back({"pool", kPoolLabels[pool]});
      add(families, figure.metric, figure.help, figure.type, labels,
          static_cast<double>((stats.*figure.counter)[pool].*figure.field));
    }
  }
  for (const DeviceFigure& figure : kDeviceCounters) {
    add(families, figure.metric, figure.help, MetricType::Counter, base, static_cast<double>(stats.*figure.value));
  }
  add(families, "cudascope_memory_fragmentation_ratio",
      "Share of cached (reserved but inactive) bytes outside the largest free block: 1 - largest free block / "
      "(reserved - active); 0 when nothing is cached. The snapshot figures' external fragmentation.",
      MetricType::Gauge, base, fragmentation(stats));
  if (!options.per_stream) return;
  for (const auto& [stream, stream_stats] : cuda::allocator_stats_per_stream(device)) {
    auto labels = base;
    labels.push_back({"stream", std::to_string(stream)});
    add(families, "cudascope_memory_stream_allocated_bytes", "Bytes in allocated blocks, per stream.",
        MetricType::Gauge, labels, static_cast<double>(stream_stats.allocated_bytes.current));
    add(families, "cudascope_memory_stream_reserved_bytes", "Bytes in segments reserved, per stream.",
        MetricType::Gauge, labels, static_cast<double>(stream_stats.reserved_bytes.current));
  }
}

// The caching host allocator's figures (host_memory_stats), process-wide: no device label.
// Named as the device allocator's: "reserved" is the pinned memory it holds (torch's
// allocated_bytes), "active" what is handed out or still used by stream work.
struct HostFigure {
  const char* key;  // host_memory_stats key
  const char* metric;
  const char* help;
  MetricType type;
  double scale;
};
const HostFigure kHostFigures[] = {
    {"allocated_bytes.current", "cudascope_host_memory_reserved_bytes",
     "Pinned host memory the caching host allocator holds, cached or in use.", MetricType::Gauge, 1.0},
    {"allocated_bytes.peak", "cudascope_host_memory_reserved_peak_bytes",
     "Peak of pinned host memory held since the last reset.", MetricType::Gauge, 1.0},
    {"active_bytes.current", "cudascope_host_memory_active_bytes",
     "Pinned bytes handed out, or freed but still used by stream work.", MetricType::Gauge, 1.0},
    {"active_bytes.peak", "cudascope_host_memory_active_peak_bytes", "Peak of active pinned bytes since the last reset.",
     MetricType::Gauge, 1.0},
    {"allocations.current", "cudascope_host_memory_segments", "Pinned blocks the allocator holds.", MetricType::Gauge,
     1.0},
    {"active_requests.current", "cudascope_host_memory_blocks", "Pinned blocks handed out or still used by stream work.",
     MetricType::Gauge, 1.0},
    {"active_requests.allocated", "cudascope_host_memory_allocations_total",
     "Pinned allocations served since the last reset.", MetricType::Counter, 1.0},
    {"num_host_alloc", "cudascope_host_memory_host_allocs_total",
     "New pinned memory obtained (cudaHostAlloc, cudaHostRegister or the reserve segment) since the last reset.",
     MetricType::Counter, 1.0},
    {"num_host_free", "cudascope_host_memory_host_frees_total", "Pinned memory returned since the last reset.",
     MetricType::Counter, 1.0},
    {"host_alloc_time.total", "cudascope_host_memory_host_alloc_seconds_total",
     "Time spent obtaining pinned memory since the last reset.", MetricType::Counter, 1e-6},
    {"host_free_time.total", "cudascope_host_memory_host_free_seconds_total",
     "Time spent returning pinned memory since the last reset.", MetricType::Counter, 1e-6},
};

void collect_host_allocator(Families& families, const std::vector<prometheus::ClientMetric::Label>& labels) {
  const std::map<std::string, std::int64_t> stats = cuda::host_memory_stats();
  for (const HostFigure& figure : kHostFigures) {
    add(families, figure.metric, figure.help, figure.type, labels, static_cast<double>(stats.at(figure.key)) * figure.scale);
  }
}

// A device this process used: its allocator reserved memory there at some point.
bool used(const cuda::AllocatorStats& stats) {
  return stats.reserved_bytes[cuda::kPoolAll].peak > 0 || stats.num_device_alloc > 0 ||
         stats.segment[cuda::kPoolAll].allocated > 0;
}

// NVML's clock event (throttle) reason bits, one 0/1 series each.
constexpr std::pair<std::uint64_t, const char*> kClockEventReasons[] = {
    {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},  {0x100, "display_clock_setting"},
};

// A figure the device does not report is left out (absent, not zero); on a real device the
// log says so once per device and figure.
void absent(int device, const char* figure) {
  static std::mutex mutex;
  static std::set<std::pair<int, std::string>> said;
  if (cuda::backend_name() != "cuda") return;  // the simulated device models only the basic figures
  std::lock_guard lock(mutex);
  if (!said.insert({device, figure}).second) return;
  std::fprintf(stderr, "cudascope: device %d: NVML does not report %s here (driver or device lacks it); left out\n",
               device, figure);
}

// The figures beyond torch.cuda's (dcgm-exporter's default set).
void collect_extra_health(Families& families, int device, const cuda::DeviceTelemetry& h,
                          const std::vector<prometheus::ClientMetric::Label>& base) {
  const auto gauge = [&](const char* name, const char* help, const auto& value, double scale, const char* what,
                         std::initializer_list<prometheus::ClientMetric::Label> extra = {}) {
    if (!value) return absent(device, what);
    auto labels = base;
    labels.insert(labels.end(), extra.begin(), extra.end());
    add(families, name, help, MetricType::Gauge, labels, static_cast<double>(*value) * scale);
  };
  const auto counter = [&](const char* name, const char* help, const auto& value, const char* what,
                           std::initializer_list<prometheus::ClientMetric::Label> extra = {}) {
    if (!value) return absent(device, what);
    auto labels = base;
    labels.insert(labels.end(), extra.begin(), extra.end());
    add(families, name, help, MetricType::Counter, labels, static_cast<double>(*value));
  };
  gauge("cudascope_gpu_memory_clock_hertz", "Memory clock.", h.memory_clock_mhz, 1e6, "the memory clock");
  gauge("cudascope_gpu_power_limit_watts", "Enforced power limit.", h.power_limit_milliwatts, 1e-3, "the power limit");
  if (h.clock_event_reasons) {
    for (const auto& [bit, reason] : kClockEventReasons) {
      const std::optional<int> active = (*h.clock_event_reasons & bit) != 0 ? 1 : 0;
      gauge("cudascope_gpu_clock_event_active", "1 while this reason holds the clocks down (NVML clock event reasons).",
            active, 1.0, "clock event reasons", {{"reason", reason}});
    }
  } else {
    absent(device, "clock event reasons");
  }
  const char* pcie_help = "PCIe throughput over NVML's last ~20 ms sample.";
  gauge("cudascope_gpu_pcie_throughput_bytes_per_second", pcie_help, h.pcie_tx_bytes_per_second, 1.0, "PCIe throughput",
        {{"direction", "tx"}});
  gauge("cudascope_gpu_pcie_throughput_bytes_per_second", pcie_help, h.pcie_rx_bytes_per_second, 1.0, "PCIe throughput",
        {{"direction", "rx"}});
  counter("cudascope_gpu_pcie_replays_total", "PCIe replays since the driver loaded.", h.pcie_replays, "PCIe replays");
  gauge("cudascope_gpu_encoder_utilization_ratio", "Video encoder utilization.", h.encoder_utilization_percent, 0.01,
        "encoder utilization");
  gauge("cudascope_gpu_decoder_utilization_ratio", "Video decoder utilization.", h.decoder_utilization_percent, 0.01,
        "decoder utilization");
  const char* ecc_help = "ECC errors over the device's life.";
  counter("cudascope_gpu_ecc_errors_total", ecc_help, h.ecc_corrected_errors, "ECC errors", {{"type", "corrected"}});
  counter("cudascope_gpu_ecc_errors_total", ecc_help, h.ecc_uncorrected_errors, "ECC errors", {{"type", "uncorrected"}});
  const char* rows_help = "Memory rows remapped, by the kind of error that caused it.";
  gauge("cudascope_gpu_remapped_rows", rows_help, h.remapped_rows_correctable, 1.0, "remapped rows",
        {{"cause", "correctable"}});
  gauge("cudascope_gpu_remapped_rows", rows_help, h.remapped_rows_uncorrectable, 1.0, "remapped rows",
        {{"cause", "uncorrectable"}});
  gauge("cudascope_gpu_row_remap_pending", "1 when a row remap waits for the next GPU reset.", h.row_remap_pending, 1.0,
        "remapped rows");
  gauge("cudascope_gpu_row_remap_failed", "1 when a row remap has failed.", h.row_remap_failed, 1.0, "remapped rows");
}

void collect_health(Families& families, int device, const std::vector<prometheus::ClientMetric::Label>& base) {
  cuda::DeviceTelemetry health;
  try {
    health = cuda::device_telemetry(device);
  } catch (const cuda::Error& e) {
    // No NVML: the allocator and info families still report; the health ones are absent
    // (not zero), and the log says why once.
    static std::once_flag said;
    std::call_once(said, [&] { std::fprintf(stderr, "cudascope: no device health metrics: %s\n", e.what()); });
    return;
  }
  auto gauge = [&](const char* name, const char* help, double value) {
    add(families, name, help, MetricType::Gauge, base, value);
  };
  if (health.utilization_percent) {
    gauge("cudascope_gpu_utilization_ratio", "Share of the last sample period a kernel was running.",
          *health.utilization_percent / 100.0);
  }
  if (health.memory_utilization_percent) {
    gauge("cudascope_gpu_memory_utilization_ratio", "Share of the last sample period device memory was busy.",
          *health.memory_utilization_percent / 100.0);
  }
  if (health.temperature_celsius) {
    gauge("cudascope_gpu_temperature_celsius", "GPU temperature.", *health.temperature_celsius);
  }
  if (health.power_milliwatts) gauge("cudascope_gpu_power_watts", "Power draw.", *health.power_milliwatts / 1000.0);
  if (health.sm_clock_mhz) gauge("cudascope_gpu_sm_clock_hertz", "SM clock.", *health.sm_clock_mhz * 1e6);
  if (health.energy_millijoules) {
    add(families, "cudascope_gpu_energy_joules_total", "Energy used since the driver loaded.", MetricType::Counter,
        base, static_cast<double>(*health.energy_millijoules) / 1000.0);
  }
  gauge("cudascope_gpu_memory_used_bytes", "Device memory in use by all processes.",
        static_cast<double>(health.memory_used_bytes));
  gauge("cudascope_gpu_memory_total_bytes", "Device memory.", static_cast<double>(health.memory_total_bytes));
  collect_extra_health(families, device, health, base);
  gauge("cudascope_gpu_memory_free_bytes", "Device memory not in use by any process.",
        static_cast<double>(health.memory_total_bytes - std::min(health.memory_used_bytes, health.memory_total_bytes)));
  gauge("cudascope_gpu_processes", "Processes using the device.", static_cast<double>(health.processes.size()));
  // One series per process on the device (bounded by the processes that fit on it).
  for (const cuda::GpuProcess& process : health.processes) {
    auto labels = base;
    labels.push_back({"pid", std::to_string(process.pid)});
    add(families, "cudascope_gpu_process_memory_bytes", "Device memory a process uses (NVML's process query).",
        MetricType::Gauge, labels, static_cast<double>(process.used_memory_bytes));
  }
}

}  // namespace

RuntimeCollector::RuntimeCollector(MetricsOptions options) : options_(std::move(options)) {
  const ProcessLabels process = ProcessLabels::from_environment(options_.job);
  if (options_.host.empty()) options_.host = process.host;
  if (options_.rank.empty()) options_.rank = process.rank;
  constant_labels_.push_back({"host", options_.host});
  if (!options_.rank.empty()) constant_labels_.push_back({"rank", options_.rank});
  if (options_.process) {
    constant_labels_.push_back({"pid", process.pid});
    if (!process.local_rank.empty()) constant_labels_.push_back({"local_rank", process.local_rank});
  }
  const std::string job = options_.process ? process.job : options_.job;
  if (!job.empty()) constant_labels_.push_back({"job", job});
}

std::vector<MetricFamily> RuntimeCollector::Collect() const {
  Families families;
  if (!cuda::is_available()) return families.take();
  std::vector<int> devices = options_.devices;
  if (devices.empty()) {
    for (int i = 0; i < cuda::device_count(); ++i) devices.push_back(i);
  }
  const std::string backend = cuda::backend_name();
  for (int device : devices) {
    cuda::AllocatorStats stats;
    if (options_.allocator || options_.process) stats = cuda::allocator_stats(device);
    if (options_.process && options_.devices.empty() && !used(stats)) continue;
    const cuda::DeviceProperties props = cuda::get_device_properties(device);
    std::vector<prometheus::ClientMetric::Label> base{{"device", std::to_string(device)}, {"uuid", props.uuid_string()}};
    base.insert(base.end(), constant_labels_.begin(), constant_labels_.end());
    auto info = base;
    info.push_back({"name", props.name});
    info.push_back({"capability", std::to_string(props.major) + "." + std::to_string(props.minor)});
    info.push_back({"backend", backend});
    add(families, "cudascope_device_info", "The device, with its name, capability and backend as labels.",
        MetricType::Gauge, info, 1.0);
    if (options_.allocator) collect_allocator(families, options_, device, stats, base);
    if (options_.device_health && !options_.process) collect_health(families, device, base);
  }
  // In process mode only once the program has used pinned memory, as devices it never used
  // are left out.
  if (options_.allocator) {
    const bool host_used = cuda::host_memory_stats().at("allocated_bytes.peak") > 0;
    if (!options_.process || host_used) collect_host_allocator(families, constant_labels_);
  }
  return families.take();
}

}  // namespace cudascope::metrics::detail

namespace cudascope::metrics {

ProcessLabels ProcessLabels::from_environment(const std::string& job) {
  const auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  ProcessLabels labels;
  labels.host = detail::host_name();
  labels.pid = std::to_string(getpid());
  labels.rank = env("RANK");
  labels.local_rank = env("LOCAL_RANK");
  labels.job = job.empty() ? env("CUDASCOPE_JOB") : job;
  return labels;
}

void check_devices(const MetricsOptions& options) {
  int count = 0;
  try {
    count = cuda::device_count();
  } catch (const cuda::Error& e) {
    throw std::runtime_error(std::string("no device to report: ") + e.what());
  }
  const std::string backend = cuda::backend_name();
  if (count == 0) {
    throw std::runtime_error("no device to report: the " + backend +
                             " backend found none (CUDASCOPE_BACKEND=sim reports a simulated one)");
  }
  for (int device : options.devices) {
    if (device < 0 || device >= count) {
      throw std::out_of_range("device " + std::to_string(device) + " does not exist: the " + backend + " backend has " +
                              std::to_string(count) + " device(s), 0 to " + std::to_string(count - 1));
    }
  }
}

}  // namespace cudascope::metrics
