#include "runtime_collector.h"

#include "health_families.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/telemetry.h>
#include <cudascope/util/env_value.h>

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

using prometheus::MetricFamily;
using prometheus::MetricType;

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
                       const Labels& base) {
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
     "Pinned bytes handed out, counted as torch.cuda.host_memory_stats() counts them (PyTorch 2.11 "
     "keeps a block freed without stream use counted; see host_memory.h).", MetricType::Gauge, 1.0},
    {"active_bytes.peak", "cudascope_host_memory_active_peak_bytes", "Peak of active pinned bytes since the last reset.",
     MetricType::Gauge, 1.0},
    {"allocations.current", "cudascope_host_memory_segments", "Pinned blocks the allocator holds.", MetricType::Gauge,
     1.0},
    {"active_requests.current", "cudascope_host_memory_blocks", "Pinned blocks handed out, counted as torch.cuda.host_memory_stats()' active_requests (see "
     "host_memory.h).",
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

void collect_host_allocator(Families& families, const Labels& labels) {
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

// Device health: from the sampler's latest reading when there is one, else read now.
void collect_health(Families& families, int device, const Labels& base, const HealthSampler* sampler) {
  HealthSampler::Reading reading = sampler != nullptr ? sampler->latest(device) : HealthSampler::read(device);
  if (!reading.figures) {
    // No NVML: the allocator and info families still report; the health ones are absent
    // (not zero), and the log says why once.
    static std::once_flag said;
    std::call_once(said, [&] { std::fprintf(stderr, "cudascope: no device health metrics: %s\n", reading.error.c_str()); });
    return;
  }
  // The simulated device models only the basic figures: the rest is absent without a word.
  add_health(families, device, *reading.figures, base, /*log_absent=*/cuda::backend_name() == "cuda");
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
  if (options_.device_health && !options_.process && options_.health_interval.count() > 0 && cuda::is_available()) {
    std::vector<int> devices = options_.devices;
    if (devices.empty()) {
      for (int i = 0; i < cuda::device_count(); ++i) devices.push_back(i);
    }
    sampler_ = std::make_unique<HealthSampler>(std::move(devices), options_.health_interval);
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
    cuda::AllocatorStats stats;
    if (options_.allocator || options_.process) stats = cuda::allocator_stats(device);
    if (options_.process && options_.devices.empty() && !used(stats)) continue;
    const cuda::DeviceProperties props = cuda::get_device_properties(device);
    Labels base{{"device", std::to_string(device)}, {"uuid", props.uuid_string()}};
    base.insert(base.end(), constant_labels_.begin(), constant_labels_.end());
    auto info = base;
    info.push_back({"name", props.name});
    info.push_back({"capability", std::to_string(props.major) + "." + std::to_string(props.minor)});
    info.push_back({"backend", backend});
    add(families, "cudascope_device_info", "The device, with its name, capability and backend as labels.",
        MetricType::Gauge, info, 1.0);
    if (options_.allocator) collect_allocator(families, options_, device, stats, base);
    if (options_.device_health && !options_.process) collect_health(families, device, base, sampler_.get());
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
  labels.job = job.empty() ? util::env_text("CUDASCOPE_JOB").value_or("") : job;
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
