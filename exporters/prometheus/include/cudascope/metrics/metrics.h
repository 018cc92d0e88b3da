#pragma once
// Prometheus metrics for cudascope: allocator statistics (PyTorch's memory_stats, per pool
// and per stream), device health (NVML, or the simulated device's model) and device info.
// Figures are read at scrape time, so recording costs nothing between scrapes.
//
// Names follow Prometheus conventions: `cudascope_*`, base units (_bytes, _ratio,
// _celsius, _watts, _joules_total, _hertz), bounded labels (device, uuid, pool, stream,
// and the constant labels host and rank).
//
// Thread-safety: render_metrics may be called from any thread; a MetricsServer serves
// scrapes on its own threads until it is destroyed.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::metrics {

struct MetricsOptions {
  // Which families to collect.
  bool allocator = true;      // memory_stats of this process's caching allocator
  bool per_stream = true;     // allocated/reserved bytes per stream (bounded by the streams used)
  bool device_health = true;  // utilization, temperature, power, clocks, energy, memory
  // Devices to report; empty: all devices of the current backend.
  std::vector<int> devices;
  // Constant labels: host (default: the host name) and rank (default: $RANK, omitted if unset).
  std::string host;
  std::string rank;
};

// The current metrics in Prometheus' text exposition format (version 0.0.4).
std::string render_metrics(const MetricsOptions& options = {});

// An HTTP endpoint serving /metrics. `bind` is "address:port"; port 0 picks a free port.
// Throws std::runtime_error naming the address when it cannot listen.
class MetricsServer {
 public:
  explicit MetricsServer(const std::string& bind = "0.0.0.0:9400", MetricsOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The port it listens on (the chosen one when asked for port 0).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudascope::metrics
