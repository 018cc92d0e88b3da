#pragma once
// Prometheus metrics for cudascope: allocator statistics (PyTorch's memory_stats, per pool
// and per stream), the caching host allocator's (host_memory_stats, cudascope_host_memory_*,
// without a device label), device health (NVML, or the simulated device's model) and device
// info.
// Figures are read at scrape time, so recording costs nothing between scrapes (device health
// can instead be read by a background thread: MetricsOptions::health_interval).
//
// Device health, cudascope_gpu_* per device; each is absent (not zero) where NVML does not
// give it, and the log says so once per device:
//   utilization_ratio, memory_utilization_ratio, temperature_celsius, power_watts,
//   sm_clock_hertz, energy_joules_total, memory_{used,free,total}_bytes, processes,
//   process_memory_bytes{pid}                          torch.cuda's figures
//   memory_clock_hertz, memory_temperature_celsius, memory_reserved_bytes (set aside by the
//   driver), power_limit_watts, clock_event_active{reason}, pcie_throughput_bytes_per_second
//   {direction}, pcie_replays_total, nvlink_bytes_total{direction} (data bytes over all links),
//   encoder/decoder_utilization_ratio, ecc_errors_total{type}, remapped_rows{cause},
//   row_remap_pending, row_remap_failed                dcgm-exporter's default set
//   last_xid (0: none since start), xid_errors_total{xid}   NVML's XID error events
//   process_utilization_ratio{pid}                      SM share per process (NVML samples)
//   sm_active_ratio, sm_occupancy_ratio, tensor_active_ratio, dram_active_ratio
//                                                       GPM (Hopper and later), over the window
//                                                       since the previous reading
//
// Names follow Prometheus conventions: `cudascope_*`, base units (_bytes, _ratio,
// _celsius, _watts, _joules_total, _hertz). Labels and their bounds:
//   device, uuid      one per device reported
//   pool              all, small, large
//   stream            one per stream the allocator served (streams a program creates)
//   host              constant: the host name
//   reason, direction, type, cause   a fixed set each (see above)
//   xid               the XID codes seen on the device: at most 32, then "other"
//   pid (device health)   one per process NVML lists on the device
//   pid, rank, local_rank, job   constant, per-process figures only (see MetricsOptions::process);
//                     Prometheus keeps `job` as is only with `honor_labels: true` in the scrape
//                     config (else it stores it as exported_job beside its own job label)
// Counters never share a base name with a gauge (so OpenMetrics parsers accept the text),
// and `promtool check metrics` passes on every exposition.
//
// Thread-safety: render_metrics may be called from any thread; a MetricsServer serves
// scrapes on its own thread until it is destroyed.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::cuda {
struct DeviceTelemetry;
}

namespace cudascope::metrics {

// The constant labels that say which process figures belong to.
struct ProcessLabels {
  std::string host;        // the host name
  std::string pid;         // this process
  std::string rank;        // $RANK (torchrun), empty when unset
  std::string local_rank;  // $LOCAL_RANK
  std::string job;         // `job`, else $CUDASCOPE_JOB, empty when neither
  // This process's labels from the environment.
  static ProcessLabels from_environment(const std::string& job = "");
};

struct MetricsOptions {
  // Which families to collect.
  bool allocator = true;      // memory_stats and host_memory_stats of this process's allocators
  bool per_stream = true;     // allocated/reserved bytes per stream (bounded by the streams used)
  bool device_health = true;  // utilization, temperature, power, clocks, energy, memory
  // 0: device health is read at each scrape. Above 0: a thread reads it this often and
  // scrapes show the latest reading, so a scrape costs only formatting (NVML's PCIe figures
  // take 20 ms, GPM figures need a window); `cudascope serve` reads every second.
  std::chrono::milliseconds health_interval{0};
  // Devices to report; empty: all devices of the current backend (process mode: those whose
  // allocator this process used).
  std::vector<int> devices;
  // Per-process figures, as a program serving CUDASCOPE_METRICS exports them: the allocator
  // and device info of the devices it used, labelled with pid (and rank, local_rank, job);
  // no device health, which `cudascope serve` exports once per device for every process.
  bool process = false;
  // Constant labels: host (default: the host name) and rank (default: $RANK, omitted if
  // unset); in process mode also pid, local_rank and job (ProcessLabels::from_environment).
  std::string host;
  std::string rank;
  std::string job;
};

// Throws std::out_of_range naming the device and the backend's device count when one of
// `options.devices` is not a device, and std::runtime_error when the backend has no device
// (or cannot start: the message says why). Call it before serving: scrapes then cannot fail.
void check_devices(const MetricsOptions& options);

// The current metrics in Prometheus' text exposition format (version 0.0.4).
// Throws as check_devices does.
std::string render_metrics(const MetricsOptions& options = {});

// One device's health figures as the exporter writes them (labels device and host): a
// figure `figures` leaves empty has no series. For programs that read cuda::DeviceTelemetry
// their own way, and to check the formatting of figures the local device cannot give.
std::string render_device_health(const cuda::DeviceTelemetry& figures, int device = 0);

// An HTTP endpoint serving /metrics (see http_server.h for its limits: clients that send
// nothing or read slowly never hold a scrape back). `bind` is "address:port"; port 0 picks
// a free port. The default listens on loopback only: exposing it is the caller's choice.
class MetricsServer {
 public:
  // Serves render_metrics(options). Throws std::invalid_argument naming `bind` when it is
  // not an address:port, std::runtime_error naming it when it cannot listen, and as
  // check_devices does.
  explicit MetricsServer(const std::string& bind = "127.0.0.1:9400", MetricsOptions options = {});
  // Serves only what add_source adds.
  static std::unique_ptr<MetricsServer> without_sources(const std::string& bind);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Adds text appended to every scrape (whole metric families, names distinct from the
  // others'). Thread-safe; `render` is called on the server's thread.
  void add_source(std::function<std::string()> render);
  // Answers GET/HEAD requests for `path` (e.g. "/trace") with handler(query, from_loopback)
  // -> {HTTP status, plain-text body}. `query` is the undecoded text after '?'. The handler
  // runs on the server's thread: it must return within milliseconds. Thread-safe.
  using Handler = std::function<std::pair<int, std::string>(const std::string& query, bool from_loopback)>;
  void add_handler(const std::string& path, Handler handler);
  // The port it listens on (the chosen one when asked for port 0).
  int port() const;
  // The address it listens on as `bind` gave it, with the port it listens on: what a client
  // connects to ("127.0.0.1:34151" for "127.0.0.1:0"), for messages and URLs.
  std::string address() const;

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The one server of this process for CUDASCOPE_METRICS: created on the first call on
// `bind`, shared by the runtime's figures and the profiler's (later calls with another bind
// throw std::invalid_argument). Never destroyed. Throws as MetricsServer does.
MetricsServer& process_server(const std::string& bind);

}  // namespace cudascope::metrics
