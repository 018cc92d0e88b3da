#include "runtime_collector.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/telemetry.h>

#include <unistd.h>

#include <cstdlib>
#include <map>
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

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

struct PoolKey {
  const char* stats_name;  // memory_stats' pool name
  const char* label;       // the pool label's value
};
constexpr PoolKey kPools[] = {{"all", "all"}, {"small_pool", "small"}, {"large_pool", "large"}};

// memory_stats figures exported per pool: (stats prefix, stat, metric, help, type).
struct PoolFigure {
  const char* prefix;
  const char* stat;
  const char* metric;
  const char* help;
  MetricType type;
};
constexpr PoolFigure kPoolFigures[] = {
    {"allocated_bytes", "current", "cudascope_memory_allocated_bytes", "Bytes in allocated blocks.", MetricType::Gauge},
    {"allocated_bytes", "peak", "cudascope_memory_allocated_peak_bytes", "Peak of allocated bytes since the last reset.",
     MetricType::Gauge},
    {"reserved_bytes", "current", "cudascope_memory_reserved_bytes", "Bytes in segments reserved from the device.",
     MetricType::Gauge},
    {"reserved_bytes", "peak", "cudascope_memory_reserved_peak_bytes", "Peak of reserved bytes since the last reset.",
     MetricType::Gauge},
    {"active_bytes", "current", "cudascope_memory_active_bytes", "Bytes in active blocks (allocated or pending free).",
     MetricType::Gauge},
    {"inactive_split_bytes", "current", "cudascope_memory_inactive_split_bytes",
     "Bytes in inactive blocks that are split off a larger block (fragmentation).", MetricType::Gauge},
    {"requested_bytes", "current", "cudascope_memory_requested_bytes",
     "Bytes requested by callers (before the allocator's rounding).", MetricType::Gauge},
    {"allocation", "current", "cudascope_memory_blocks", "Allocated blocks.", MetricType::Gauge},
    {"segment", "current", "cudascope_memory_segments", "Reserved segments.", MetricType::Gauge},
    {"allocated_bytes", "allocated", "cudascope_memory_allocated_bytes_total", "Bytes allocated since the last reset.",
     MetricType::Counter},
    {"allocated_bytes", "freed", "cudascope_memory_freed_bytes_total", "Bytes freed since the last reset.",
     MetricType::Counter},
    {"allocation", "allocated", "cudascope_memory_allocations_total", "Allocations since the last reset.",
     MetricType::Counter},
    {"allocation", "freed", "cudascope_memory_frees_total", "Frees since the last reset.", MetricType::Counter},
    {"segment", "allocated", "cudascope_memory_segment_allocations_total",
     "Segments reserved from the device since the last reset.", MetricType::Counter},
    {"segment", "freed", "cudascope_memory_segment_frees_total", "Segments released to the device since the last reset.",
     MetricType::Counter},
};

// memory_stats figures without a pool: (key, metric, help).
struct DeviceFigure {
  const char* key;
  const char* metric;
  const char* help;
};
constexpr DeviceFigure kDeviceCounters[] = {
    {"num_ooms", "cudascope_memory_oom_total", "Out-of-memory errors raised."},
    {"num_alloc_retries", "cudascope_memory_alloc_retries_total",
     "Device allocations that failed and were retried after freeing the cache."},
    {"num_device_alloc", "cudascope_memory_device_allocs_total", "Device memory allocations (cudaMalloc and maps)."},
    {"num_device_free", "cudascope_memory_device_frees_total", "Device memory releases (cudaFree and unmaps)."},
    {"num_sync_all_streams", "cudascope_memory_sync_all_streams_total",
     "Times the allocator synchronised every stream (to release cached memory)."},
};

std::int64_t stat(const std::map<std::string, std::int64_t>& stats, const std::string& key) {
  const auto found = stats.find(key);
  return found == stats.end() ? 0 : found->second;
}

void collect_allocator(Families& families, const MetricsOptions& options, int device,
                       const std::vector<prometheus::ClientMetric::Label>& base) {
  const std::map<std::string, std::int64_t> stats = cuda::memory_stats(device);
  for (const PoolFigure& figure : kPoolFigures) {
    for (const PoolKey& pool : kPools) {
      auto labels = base;
      labels.push_back({"pool", pool.label});
      const std::string key = std::string(figure.prefix) + "." + pool.stats_name + "." + figure.stat;
      add(families, figure.metric, figure.help, figure.type, labels, static_cast<double>(stat(stats, key)));
    }
  }
  for (const DeviceFigure& figure : kDeviceCounters) {
    add(families, figure.metric, figure.help, MetricType::Counter, base, static_cast<double>(stat(stats, figure.key)));
  }
  const double reserved = static_cast<double>(stat(stats, "reserved_bytes.all.current"));
  const double allocated = static_cast<double>(stat(stats, "allocated_bytes.all.current"));
  add(families, "cudascope_memory_fragmentation_ratio",
      "Share of reserved bytes not in allocated blocks (1 - allocated / reserved; 0 when nothing is reserved).",
      MetricType::Gauge, base, reserved > 0 ? 1.0 - allocated / reserved : 0.0);
  if (!options.per_stream) return;
  for (const auto& [stream, stream_stats] : cuda::memory_stats_per_stream(device)) {
    auto labels = base;
    labels.push_back({"stream", std::to_string(stream)});
    add(families, "cudascope_memory_stream_allocated_bytes", "Bytes in allocated blocks, per stream.",
        MetricType::Gauge, labels, static_cast<double>(stat(stream_stats, "allocated_bytes.current")));
    add(families, "cudascope_memory_stream_reserved_bytes", "Bytes in segments reserved, per stream.",
        MetricType::Gauge, labels, static_cast<double>(stat(stream_stats, "reserved_bytes.current")));
  }
}

void collect_health(Families& families, int device, const std::vector<prometheus::ClientMetric::Label>& base) {
  cuda::DeviceTelemetry health;
  try {
    health = cuda::device_telemetry(device);
  } catch (const cuda::Error&) {
    return;  // no NVML: the allocator and info families still report
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
  gauge("cudascope_gpu_processes", "Processes using the device.", static_cast<double>(health.processes.size()));
}

}  // namespace

RuntimeCollector::RuntimeCollector(MetricsOptions options) : options_(std::move(options)) {
  if (options_.host.empty()) options_.host = host_name();
  if (options_.rank.empty()) {
    if (const char* rank = std::getenv("RANK")) options_.rank = rank;
  }
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
    const cuda::DeviceProperties props = cuda::get_device_properties(device);
    std::vector<prometheus::ClientMetric::Label> base{{"device", std::to_string(device)}, {"uuid", props.uuid_string()},
                                                      {"host", options_.host}};
    if (!options_.rank.empty()) base.push_back({"rank", options_.rank});
    auto info = base;
    info.push_back({"name", props.name});
    info.push_back({"capability", std::to_string(props.major) + "." + std::to_string(props.minor)});
    info.push_back({"backend", backend});
    add(families, "cudascope_device_info", "The device, with its name, capability and backend as labels.",
        MetricType::Gauge, info, 1.0);
    if (options_.allocator) collect_allocator(families, options_, device, base);
    if (options_.device_health) collect_health(families, device, base);
  }
  return families.take();
}

}  // namespace cudascope::metrics::detail
