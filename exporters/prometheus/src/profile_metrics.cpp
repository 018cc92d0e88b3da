#include <cudascope/metrics/profile_metrics.h>

#include "top_names.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

namespace cudascope::metrics {
namespace {

using profiler::Record;
using profiler::RecordKind;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

constexpr double kNs = 1e-9;
constexpr const char* kKernelsHelp = "Kernels completed, by name (top names by GPU time; the rest as other).";
constexpr const char* kKernelSecondsHelp = "GPU time in kernels, by name (top names by GPU time; the rest as other).";
constexpr const char* kKernelsEstimatedHelp =
    "ESTIMATE of kernels completed, by name, from sampled windows of kernel records: each kernel seen counts as "
    "period/window kernels (see cudascope_kernel_sampling_ratio). Top names by GPU time; the rest as other.";
constexpr const char* kKernelSecondsEstimatedHelp =
    "ESTIMATE of GPU time in kernels, by name, from sampled windows of kernel records: each kernel seen counts "
    "period/window times (see cudascope_kernel_sampling_ratio). Top names by GPU time; the rest as other.";
constexpr const char* kDroppedHelp = "Records lost (record buffers full, or CUPTI's own losses).";
constexpr std::size_t kMaxLabelLength = 200;     // longer names are cut (templates can run to kilobytes)
constexpr std::size_t kMaxDomains = 16;
constexpr std::size_t kMaxOpenRanges = 256;      // per thread; deeper pushes are not timed
constexpr std::size_t kClosedRangesKept = 4096;  // per thread, for launches reported late (CUPTI)
constexpr std::size_t kMaxPendingKernels = 1u << 16;
// NVTX range durations, seconds: 10 us to 1 min.
constexpr std::array<double, 12> kRangeBuckets{1e-5, 1e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60};

struct Totals {
  std::uint64_t count = 0;
  std::uint64_t ns = 0;
  std::uint64_t bytes = 0;
  Totals& operator+=(const Totals& o) { count += o.count, ns += o.ns, bytes += o.bytes; return *this; }
  Totals& operator-=(const Totals& o) { count -= o.count, ns -= o.ns, bytes -= o.bytes; return *this; }
  std::uint64_t rank() const { return ns; }
};

struct Durations {
  std::uint64_t count = 0;
  std::uint64_t ns = 0;
  std::array<std::uint64_t, kRangeBuckets.size()> buckets{};  // not cumulative
  Durations& operator+=(const Durations& o) {
    count += o.count, ns += o.ns;
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] += o.buckets[i];
    return *this;
  }
  Durations& operator-=(const Durations& o) {
    count -= o.count, ns -= o.ns;
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i] -= o.buckets[i];
    return *this;
  }
  std::uint64_t rank() const { return ns; }
  static Durations one(std::uint64_t ns) {
    Durations d;
    d.count = 1;
    d.ns = ns;
    const double seconds = static_cast<double>(ns) * kNs;
    for (std::size_t i = 0; i < kRangeBuckets.size(); ++i) {
      if (seconds <= kRangeBuckets[i]) {
        ++d.buckets[i];
        break;
      }
    }
    return d;
  }
};

// The host wait a runtime call stands for, typed as CUPTI types its synchronisation record of
// that call; kUnknown for a call that is not a synchronize.
profiler::SyncType host_wait_of_call(const char* name) {
  if (name == nullptr) return profiler::SyncType::kUnknown;
  const std::string_view call(name);
  if (call.starts_with("cudaStreamSynchronize")) return profiler::SyncType::kStream;
  if (call.starts_with("cudaEventSynchronize")) return profiler::SyncType::kEvent;
  if (call.starts_with("cudaDeviceSynchronize") || call.starts_with("cudaThreadSynchronize")) {
    return profiler::SyncType::kContext;
  }
  return profiler::SyncType::kUnknown;
}

std::string demangle(const char* name) {
  if (name == nullptr) return "unknown";
  int status = 0;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string text = status == 0 && plain != nullptr ? plain : name;
  std::free(plain);
  return text;
}

std::string label_text(std::string text) {
  if (text.size() > kMaxLabelLength) text.resize(kMaxLabelLength);
  return text;
}

// Ids for strings; id 0 is "other" (and every string past the cap).
class Interner {
 public:
  explicit Interner(std::size_t cap) : cap_(cap) { names_.push_back("other"); }
  std::uint32_t id(const std::string& text) {
    auto found = ids_.find(text);
    if (found != ids_.end()) return found->second;
    if (names_.size() > cap_) return 0;
    names_.push_back(text);
    return ids_.emplace(text, static_cast<std::uint32_t>(names_.size() - 1)).first->second;
  }
  const std::string& name(std::uint32_t id) const { return names_[id]; }

 private:
  std::size_t cap_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

struct OpenRange {
  std::uint32_t name;
  std::uint32_t domain;
  std::uint64_t start_ns;
};
struct ClosedRange {
  std::uint32_t name;
  std::uint64_t start_ns;
  std::uint64_t end_ns;
};
struct ThreadRanges {
  std::vector<OpenRange> open;
  std::deque<ClosedRange> closed;  // most recent last
  std::size_t too_deep = 0;        // pushes past kMaxOpenRanges still open
};

// Kernel series key: device, kernel name id, innermost range id (0 when not labelled).
std::uint64_t kernel_key(std::int32_t device, std::uint32_t kernel, std::uint32_t range) {
  return (static_cast<std::uint64_t>(static_cast<std::uint16_t>(device)) << 48) |
         (static_cast<std::uint64_t>(kernel & 0xFFFFFFu) << 24) | (range & 0xFFFFFFu);
}

class Families {
 public:
  MetricFamily& get(const std::string& name, const std::string& help, MetricType type) {
    for (MetricFamily& f : families_) {
      if (f.name == name) return f;
    }
    families_.push_back(MetricFamily{name, help, type, {}});
    return families_.back();
  }
  void add(const std::string& name, const std::string& help, MetricType type, Labels labels, double value) {
    ClientMetric metric;
    metric.label = std::move(labels);
    if (type == MetricType::Counter) metric.counter.value = value;
    else metric.gauge.value = value;
    get(name, help, type).metric.push_back(std::move(metric));
  }
  std::vector<MetricFamily>& all() { return families_; }

 private:
  std::vector<MetricFamily> families_;
};

Labels with(Labels base, std::initializer_list<ClientMetric::Label> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

struct ProfileMetrics::State {
  explicit State(ProfileMetricsOptions o)
      : options(std::move(o)),
        kernels(options.top_names, kMaxTrackedNames),
        ranges(options.top_names, kMaxTrackedNames),
        event_timings(options.top_names, kMaxTrackedNames),
        names(kMaxTrackedNames),
        domains(kMaxDomains) {
    constant.push_back({"host", options.labels.host});
    constant.push_back({"pid", options.labels.pid});
    if (!options.labels.rank.empty()) constant.push_back({"rank", options.labels.rank});
    if (!options.labels.local_rank.empty()) constant.push_back({"local_rank", options.labels.local_rank});
    if (!options.labels.job.empty()) constant.push_back({"job", options.labels.job});
    domains.id("default");
  }

  ProfileMetricsOptions options;
  Labels constant;
  std::mutex mutex;
  detail::TopNames<std::uint64_t, Totals> kernels;
  detail::TopNames<std::uint64_t, Durations> ranges;  // key: domain << 32 | name
  detail::TopNames<std::uint32_t, Durations> event_timings;  // key: the start event's name
  Interner names;    // kernel and range names
  Interner domains;  // NVTX domains
  std::unordered_map<const char*, std::uint32_t> kernel_ids;
  std::map<std::pair<std::int32_t, std::uint8_t>, Totals> copies;  // device, CopyKindCode
  std::map<std::int32_t, Totals> memsets;
  std::map<std::uint8_t, Totals> syncs;  // SyncType
  // Device: current, peak. From the device's own allocation records (CUPTI's memory records,
  // the sim's cudaMalloc/cudaFree), which see every allocator; else from our allocator's
  // reserved bytes for a device that had none of those.
  std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> device_memory;
  std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> memory;
  std::unordered_map<std::uint32_t, ThreadRanges> threads;
  std::unordered_map<std::uint64_t, OpenRange> process_ranges;  // nvtxRangeStart id
  std::unordered_map<std::uint32_t, std::uint32_t> launch_range;  // correlation: range name id
  std::vector<Record> pending_kernels;  // labelled at flush, when their launches were seen
  std::uint64_t records = 0;
  // Sampled sessions: the timeline's segments, taken once per batch, and the kernel records seen.
  std::vector<profiler::KernelSampling::Segment> segments;
  std::map<std::int32_t, std::uint64_t> sampled_records;
  std::uint64_t dropped_buffer = 0, dropped_cupti = 0;
  std::size_t buffer_bytes = 0;

  std::uint32_t domain_id(std::int64_t domain) {
    return domain == 0 ? domains.id("default") : domains.id(reinterpret_cast<const char*>(domain));
  }

  std::uint32_t kernel_id(const char* name) {
    auto found = kernel_ids.find(name);
    if (found != kernel_ids.end()) return found->second;
    const std::uint32_t id = names.id(label_text(demangle(name)));
    kernel_ids.emplace(name, id);
    return id;
  }

  void range_closed(std::uint32_t thread, std::uint32_t domain, std::uint32_t name, std::uint64_t start,
                    std::uint64_t end) {
    ranges.add((static_cast<std::uint64_t>(domain) << 32) | name, domain, Durations::one(end > start ? end - start : 0));
    if (!options.label_nvtx) return;
    auto& closed = threads[thread].closed;
    closed.push_back({name, start, end});
    if (closed.size() > kClosedRangesKept) closed.pop_front();
  }

  // The innermost range open on `thread` at `t`: the latest-starting one that contains it.
  std::uint32_t innermost(std::uint32_t thread, std::uint64_t t) {
    const auto found = threads.find(thread);
    if (found == threads.end()) return 0;
    std::uint64_t best_start = 0;
    std::uint32_t best = 0;
    for (const OpenRange& r : found->second.open) {
      if (r.start_ns <= t && r.start_ns >= best_start) best_start = r.start_ns, best = r.name;
    }
    for (auto it = found->second.closed.rbegin(); it != found->second.closed.rend(); ++it) {
      if (it->end_ns < t && it->start_ns < best_start) break;
      if (it->start_ns <= t && t <= it->end_ns && it->start_ns >= best_start) best_start = it->start_ns, best = it->name;
    }
    return best;
  }

  bool sampled() const { return options.kernel_sampling != nullptr; }

  // A record of a sampled session (kernel, copy, memset or synchronisation: all recorded only
  // in windows) stands for its window's weight of them: its figures scaled by that weight.
  Totals weighted(const Record& r, Totals t) const {
    if (!sampled()) return t;
    const std::uint64_t weight = profiler::KernelSampling::weight_in(segments, r.start_ns);
    return Totals{t.count * weight, t.ns * weight, t.bytes * weight};
  }

  void count_kernel(const Record& r, std::uint32_t range) {
    if (sampled()) ++sampled_records[r.device];
    const Totals t = weighted(r, Totals{1, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0, 0});
    kernels.add(kernel_key(r.device, kernel_id(r.u.kernel.name), range), r.device, t);
  }

  // A synchronize call among the launch records, counted as the wait it is (only the runtime's:
  // its driver call inside would count it twice).
  void count_host_wait(const Record& call, std::uint64_t duration) {
    const profiler::SyncType type = host_wait_of_call(call.u.api.name);
    if (type == profiler::SyncType::kUnknown) return;
    syncs[static_cast<std::uint8_t>(type)] += weighted(call, Totals{1, duration, 0});
  }

  // Before each batch: the segments any kernel of it can belong to are already opened.
  void refresh_segments() {
    if (sampled()) segments = options.kernel_sampling->segments();
  }

  void consume(const Record* records_in, std::size_t count) {
    refresh_segments();
    for (std::size_t i = 0; i < count; ++i) {
      const Record& r = records_in[i];
      if (r.kind == RecordKind::kText) continue;
      ++records;
      const std::uint64_t duration = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
      switch (r.kind) {
        case RecordKind::kKernel:
          if (options.label_nvtx) {
            if (pending_kernels.size() < kMaxPendingKernels) pending_kernels.push_back(r);
            else count_kernel(r, 0);
          } else {
            count_kernel(r, 0);
          }
          break;
        case RecordKind::kMemcpy:
          copies[{r.device, r.detail}] += weighted(r, Totals{1, duration, r.u.copy.bytes});
          break;
        case RecordKind::kMemset:
          memsets[r.device] += weighted(r, Totals{1, duration, r.u.memset.bytes});
          break;
        case RecordKind::kSync:
          syncs[r.detail] += weighted(r, Totals{1, duration, 0});
          break;
        case RecordKind::kRuntimeApi:
        case RecordKind::kDriverApi:
          if (options.host_waits_from_calls && r.kind == RecordKind::kRuntimeApi) count_host_wait(r, duration);
          if (options.label_nvtx && r.correlation_id != 0) {
            if (launch_range.size() >= kMaxPendingKernels) launch_range.clear();
            launch_range[r.correlation_id] = innermost(r.thread_id, r.start_ns);
          }
          break;
        case RecordKind::kNvtxPush: {
          ThreadRanges& t = threads[r.thread_id];
          if (t.open.size() >= kMaxOpenRanges) {
            ++t.too_deep;
            break;
          }
          const std::size_t available = count - i - 1;
          t.open.push_back({names.id(label_text(profiler::record_text(r, records_in + i + 1, available))),
                            domain_id(r.stream), r.start_ns});
          break;
        }
        case RecordKind::kNvtxPop: {
          ThreadRanges& t = threads[r.thread_id];
          if (t.too_deep > 0) {
            --t.too_deep;
          } else if (!t.open.empty()) {
            const OpenRange open = t.open.back();
            t.open.pop_back();
            range_closed(r.thread_id, open.domain, open.name, open.start_ns, r.start_ns);
          }
          break;
        }
        case RecordKind::kNvtxRangeStart:
          if (process_ranges.size() < kMaxTrackedNames) {
            process_ranges[static_cast<std::uint64_t>(r.stream)] = {
                names.id(label_text(profiler::record_text(r, records_in + i + 1, count - i - 1))), domains.id("default"),
                r.start_ns};
          }
          break;
        case RecordKind::kNvtxRangeEnd: {
          const auto found = process_ranges.find(static_cast<std::uint64_t>(r.stream));
          if (found == process_ranges.end()) break;
          ranges.add((static_cast<std::uint64_t>(found->second.domain) << 32) | found->second.name, found->second.domain,
                     Durations::one(r.start_ns > found->second.start_ns ? r.start_ns - found->second.start_ns : 0));
          process_ranges.erase(found);
          break;
        }
        case RecordKind::kAllocator: {
          auto& [current, peak] = memory[r.device];
          current = r.u.allocator.reserved_bytes;
          peak = std::max(peak, current);
          break;
        }
        case RecordKind::kDeviceMemory: {
          auto& [current, peak] = device_memory[r.device];
          current = static_cast<std::int64_t>(r.u.device_memory.held_bytes);
          peak = std::max(peak, current);
          break;
        }
        case RecordKind::kEventTiming:
          event_timings.add(names.id(label_text(r.u.event_timing.name != nullptr ? r.u.event_timing.name : "")), 0,
                            Durations::one(duration));
          break;
        case RecordKind::kDropped:
          (r.detail == static_cast<std::uint8_t>(profiler::DropSource::kCupti) ? dropped_cupti : dropped_buffer) =
              r.u.dropped.total;
          break;
        default:
          break;
      }
    }
  }

  // Kernels held for their launch's range: every launch drained so far has been seen.
  void label_pending() {
    if (pending_kernels.empty()) return;
    refresh_segments();
    for (const Record& r : pending_kernels) {
      const auto found = launch_range.find(r.correlation_id);
      std::uint32_t range = 0;
      if (found != launch_range.end()) {
        range = found->second;
        launch_range.erase(found);
      }
      count_kernel(r, range);
    }
    pending_kernels.clear();
  }

  std::string render() {
    Families f;
    const auto add = [&](const char* name, const char* help, MetricType type, Labels labels, double value) {
      f.add(name, help, type, std::move(labels), value);
    };
    render_kernels(f);
    render_transfers(f);
    render_ranges(f);
    render_event_timings(f);
    auto held_memory = device_memory;
    held_memory.insert(memory.begin(), memory.end());  // keeps the device's own figures where both exist
    for (const auto& [device, held] : held_memory) {
      const Labels labels = with(constant, {{"device", std::to_string(device)}});
      add("cudascope_process_device_memory_bytes",
          "Device memory this process holds: what it obtained from the device (cudaMalloc and the like, "
          "whatever allocator asked), or its allocator's reserved bytes where those calls are not seen.",
          MetricType::Gauge, labels, static_cast<double>(held.first));
      add("cudascope_process_device_memory_peak_bytes", "Peak of the device memory this process held.",
          MetricType::Gauge, labels, static_cast<double>(held.second));
    }
    add("cudascope_profiler_records_total", "Records the profiler delivered.", MetricType::Counter, constant,
        static_cast<double>(records));
    add("cudascope_profiler_dropped_records_total", kDroppedHelp, MetricType::Counter, with(constant, {{"source", "buffers"}}), static_cast<double>(dropped_buffer));
    add("cudascope_profiler_dropped_records_total", kDroppedHelp, MetricType::Counter, with(constant, {{"source", "cupti"}}),
        static_cast<double>(dropped_cupti));
    add("cudascope_profiler_buffer_bytes", "Memory the profiler's record buffers hold.", MetricType::Gauge, constant,
        static_cast<double>(buffer_bytes));
    return prometheus::TextSerializer().Serialize(f.all());
  }

  // Copies, memsets and synchronisations: counts, or estimates under other names when sampled.
  void render_transfers(Families& f) {
    const bool estimate = sampled();
    const auto counter = [&](const char* stem, const std::string& help, const Labels& labels, double value) {
      f.add(std::string(stem) + (estimate ? "_estimated_total" : "_total"),
            estimate ? "ESTIMATE, from sampled windows of records (see cudascope_kernel_sampling_ratio): " + help : help,
            MetricType::Counter, labels, value);
    };
    for (const auto& [key, t] : copies) {
      const Labels labels = with(constant, {{"device", std::to_string(key.first)},
                                            {"kind", profiler::to_string(static_cast<profiler::CopyKindCode>(key.second))}});
      counter("cudascope_memcpy", "Copies completed, by kind.", labels, static_cast<double>(t.count));
      counter("cudascope_memcpy_bytes", "Bytes copied, by kind.", labels, static_cast<double>(t.bytes));
      counter("cudascope_memcpy_seconds", "Time the device spent copying, by kind.", labels, static_cast<double>(t.ns) * kNs);
    }
    for (const auto& [device, t] : memsets) {
      const Labels labels = with(constant, {{"device", std::to_string(device)}});
      counter("cudascope_memset", "Memsets completed.", labels, static_cast<double>(t.count));
      counter("cudascope_memset_bytes", "Bytes set.", labels, static_cast<double>(t.bytes));
      counter("cudascope_memset_seconds", "Time the device spent setting memory.", labels, static_cast<double>(t.ns) * kNs);
    }
    for (const auto& [type, t] : syncs) {
      const Labels labels = with(constant, {{"type", profiler::to_string(static_cast<profiler::SyncType>(type))}});
      counter("cudascope_sync", "Host waits on the device (stream, event, device synchronisation).", labels,
              static_cast<double>(t.count));
      counter("cudascope_sync_seconds", "Host time spent waiting on the device.", labels, static_cast<double>(t.ns) * kNs);
    }
  }

  // Kernel counts by name; estimates (other names, with the sampling ratio) when sampled.
  void render_kernels(Families& f) {
    const bool estimate = sampled();
    const char* count_name = estimate ? "cudascope_kernels_estimated_total" : "cudascope_kernels_total";
    const char* seconds_name = estimate ? "cudascope_kernel_seconds_estimated_total" : "cudascope_kernel_seconds_total";
    const char* count_help = estimate ? kKernelsEstimatedHelp : kKernelsHelp;
    const char* seconds_help = estimate ? kKernelSecondsEstimatedHelp : kKernelSecondsHelp;
    const auto add_pair = [&](const Labels& labels, const Totals& t) {
      f.add(count_name, count_help, MetricType::Counter, labels, static_cast<double>(t.count));
      f.add(seconds_name, seconds_help, MetricType::Counter, labels, static_cast<double>(t.ns) * kNs);
    };
    kernels.render(
        [&](std::uint64_t key, const Totals& t) {
          const auto device = static_cast<std::int32_t>(static_cast<std::int16_t>(key >> 48));
          Labels labels = with(constant, {{"device", std::to_string(device)},
                                          {"kernel", names.name(static_cast<std::uint32_t>((key >> 24) & 0xFFFFFFu))}});
          if (options.label_nvtx) {
            const auto range = static_cast<std::uint32_t>(key & 0xFFFFFFu);
            labels.push_back({"nvtx_range", range == 0 ? "" : names.name(range)});
          }
          add_pair(labels, t);
        },
        [&](std::int64_t device, const Totals& t) {
          Labels labels = with(constant, {{"device", std::to_string(device)}, {"kernel", "other"}});
          if (options.label_nvtx) labels.push_back({"nvtx_range", "other"});
          add_pair(labels, t);
        });
    if (estimate) render_sampling(f);
  }

  void render_sampling(Families& f) {
    const profiler::KernelSampling& sampling = *options.kernel_sampling;
    f.add("cudascope_kernel_sampling_ratio",
          "Fraction of wall time since recording began whose kernels were recorded; the *_estimated_total kernel "
          "figures are scaled up from those records.",
          MetricType::Gauge, constant, sampling.sampled_ratio());
    for (const auto& [device, n] : sampled_records) {
      f.add("cudascope_kernel_sampled_records_total",
            "Kernel records seen in sampled windows (the estimates' sample size: their relative error shrinks as "
            "one over its square root).",
            MetricType::Counter, with(constant, {{"device", std::to_string(device)}}), static_cast<double>(n));
    }
    f.add("cudascope_kernel_sampling_switches_total",
          "Times kernel records were switched on or off (two per sampled window).", MetricType::Counter, constant,
          static_cast<double>(sampling.switches()));
    f.add("cudascope_kernel_sampling_switch_seconds_total",
          "Time the sampler spent switching kernel records on and off (CUPTI's enable and disable calls).",
          MetricType::Counter, constant, static_cast<double>(sampling.switch_ns()) * kNs);
    if (sampling.counting_launches()) {
      f.add("cudascope_kernel_launches_total",
            "Kernel launch calls (runtime and driver), counted exactly; kernels run by CUDA graphs are not included.",
            MetricType::Counter, constant, static_cast<double>(sampling.launches()));
    }
  }

  static ClientMetric histogram_of(Labels labels, const Durations& d) {
    ClientMetric metric;
    metric.label = std::move(labels);
    metric.histogram.sample_count = d.count;
    metric.histogram.sample_sum = static_cast<double>(d.ns) * kNs;
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kRangeBuckets.size(); ++i) {
      cumulative += d.buckets[i];
      metric.histogram.bucket.push_back({cumulative, kRangeBuckets[i]});
    }
    metric.histogram.bucket.push_back({d.count, std::numeric_limits<double>::infinity()});
    return metric;
  }

  // Event::elapsed_time spans by the start event's name ("" when unnamed), bounded as kernels.
  void render_event_timings(Families& f) {
    MetricFamily& family = f.get("cudascope_event_duration_seconds",
                                 "Event::elapsed_time spans, by the start event's name (top names by time; the rest as "
                                 "other; \"\" for unnamed events).",
                                 MetricType::Histogram);
    event_timings.render(
        [&](std::uint32_t name, const Durations& d) {
          family.metric.push_back(histogram_of(with(constant, {{"event", names.name(name)}}), d));
        },
        [&](std::int64_t, const Durations& d) {
          family.metric.push_back(histogram_of(with(constant, {{"event", "other"}}), d));
        });
    if (family.metric.empty()) f.all().erase(f.all().begin() + (&family - f.all().data()));
  }

  void render_ranges(Families& f) {
    MetricFamily& family = f.get("cudascope_nvtx_range_duration_seconds",
                                 "NVTX range durations, by domain and name (top names by time; the rest as other).",
                                 MetricType::Histogram);
    const auto histogram = [&](Labels labels, const Durations& d) { family.metric.push_back(histogram_of(std::move(labels), d)); };
    ranges.render(
        [&](std::uint64_t key, const Durations& d) {
          histogram(with(constant, {{"domain", domains.name(static_cast<std::uint32_t>(key >> 32))},
                                    {"range", names.name(static_cast<std::uint32_t>(key & 0xFFFFFFFFu))}}),
                    d);
        },
        [&](std::int64_t domain, const Durations& d) {
          histogram(with(constant, {{"domain", domains.name(static_cast<std::uint32_t>(domain))}, {"range", "other"}}), d);
        });
    if (family.metric.empty()) f.all().erase(f.all().begin() + (&family - f.all().data()));
  }
};

ProfileMetrics::ProfileMetrics(ProfileMetricsOptions options) : state_(std::make_unique<State>(std::move(options))) {}
ProfileMetrics::~ProfileMetrics() = default;

void ProfileMetrics::consume(const profiler::Record* records, std::size_t count) {
  std::lock_guard lock(state_->mutex);
  state_->consume(records, count);
}

void ProfileMetrics::flushed() {
  std::lock_guard lock(state_->mutex);
  state_->label_pending();
}

void ProfileMetrics::set_session_stats(const profiler::SessionStats& stats) {
  std::lock_guard lock(state_->mutex);
  state_->buffer_bytes = stats.buffer_bytes;
}

std::string ProfileMetrics::render() {
  std::lock_guard lock(state_->mutex);
  state_->label_pending();
  return state_->render();
}

namespace {

class TeeSink final : public profiler::TraceSink {
 public:
  TeeSink(std::shared_ptr<ProfileMetrics> metrics, std::unique_ptr<profiler::TraceSink> inner)
      : metrics_(std::move(metrics)), inner_(std::move(inner)) {}
  void begin(const profiler::TraceInfo& info) override {
    if (inner_) inner_->begin(info);
  }
  void write(const Record* records, std::size_t count) override {
    metrics_->consume(records, count);
    if (inner_) inner_->write(records, count);
  }
  void flush() override {
    metrics_->flushed();
    if (inner_) inner_->flush();
  }
  void end(const profiler::TraceSummary& summary) override {
    if (inner_) inner_->end(summary);
  }
  std::uint64_t events_written() const noexcept override { return inner_ ? inner_->events_written() : 0; }

 private:
  std::shared_ptr<ProfileMetrics> metrics_;
  std::unique_ptr<profiler::TraceSink> inner_;
};

}  // namespace

std::unique_ptr<profiler::TraceSink> ProfileMetrics::tee(std::shared_ptr<ProfileMetrics> metrics,
                                                         std::unique_ptr<profiler::TraceSink> inner) {
  return std::make_unique<TeeSink>(std::move(metrics), std::move(inner));
}

}  // namespace cudascope::metrics
