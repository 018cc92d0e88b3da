// `cudascope metrics` (print once) and `cudascope serve` (a /metrics endpoint for Prometheus).
#include "command.h"

#include <cudascope/cuda/device.h>
#include <cudascope/metrics/metrics.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace {

struct MetricsFlags {
  bool allocator = false;
  bool no_health = false;
  std::vector<int> devices;
  std::string bind = "0.0.0.0:9400";
};

cudascope::metrics::MetricsOptions options_from(const MetricsFlags& flags) {
  cudascope::metrics::MetricsOptions options;
  options.allocator = flags.allocator;
  options.per_stream = flags.allocator;
  options.device_health = !flags.no_health;
  options.devices = flags.devices;
  return options;
}

void add_common_flags(CLI::App* sub, MetricsFlags& flags) {
  sub->add_flag("--allocator", flags.allocator,
                "Also report this process's caching-allocator statistics (for programs that embed the exporter)");
  sub->add_flag("--no-health", flags.no_health, "Leave out device health (NVML) figures");
  sub->add_option("--device", flags.devices, "Devices to report (default: all)");
}

void serve(const MetricsFlags& flags) {
  // Block the stop signals first so the server's threads never take them; wait for one below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  cudascope::metrics::MetricsServer server(flags.bind, options_from(flags));
  std::fprintf(stderr, "cudascope: serving metrics of %d device(s) on the %s backend at http://%s/metrics (port %d); "
               "Ctrl-C stops\n",
               cudascope::cuda::device_count(), cudascope::cuda::backend_name().c_str(), flags.bind.c_str(),
               server.port());
  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "cudascope: stopped serving metrics (signal %d)\n", received);
}

}  // namespace

CUDASCOPE_COMMAND(metrics, 60) {
  static MetricsFlags flags;
  CLI::App* sub = app.add_subcommand("metrics", "Print the current metrics once, in Prometheus text format");
  add_common_flags(sub, flags);
  sub->callback([] { std::fputs(cudascope::metrics::render_metrics(options_from(flags)).c_str(), stdout); });
}

CUDASCOPE_COMMAND(serve, 61) {
  static MetricsFlags flags;
  CLI::App* sub = app.add_subcommand("serve", "Serve device metrics for Prometheus at http://BIND/metrics");
  sub->add_option("--bind", flags.bind, "address:port to listen on (port 0 picks one)")->capture_default_str();
  add_common_flags(sub, flags);
  sub->callback([] { serve(flags); });
}
