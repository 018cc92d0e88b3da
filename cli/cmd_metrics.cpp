// `cudascope metrics` (print once) and `cudascope serve` (a /metrics endpoint for Prometheus).
#include "checks.h"
#include "command.h"

#include <cudascope/cuda/device.h>
#include <cudascope/metrics/metrics.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct MetricsFlags {
  bool allocator = false;
  bool no_health = false;
  std::vector<int> devices;
  std::string job;
  std::string bind = "127.0.0.1:9400";
  int health_interval_ms = 0;  // serve: 1000 unless given
};

cudascope::metrics::MetricsOptions options_from(const MetricsFlags& flags) {
  cudascope::metrics::MetricsOptions options;
  options.allocator = flags.allocator;
  options.per_stream = flags.allocator;
  options.device_health = !flags.no_health;
  options.devices = flags.devices;
  options.job = flags.job;
  options.health_interval = std::chrono::milliseconds(flags.health_interval_ms);
  return options;
}

// A device given twice would have each of its series twice: an exposition Prometheus
// rejects whole. Repeats are dropped (the first place of each kept), said once on stderr.
void drop_repeated_devices(MetricsFlags& flags) {
  std::vector<int> unique;
  std::set<int> repeated;
  for (const int device : flags.devices) {
    if (std::find(unique.begin(), unique.end(), device) == unique.end()) {
      unique.push_back(device);
    } else {
      repeated.insert(device);
    }
  }
  if (repeated.empty()) return;
  std::string list;
  for (const int device : repeated) list += (list.empty() ? "" : ", ") + std::to_string(device);
  std::fprintf(stderr, "cudascope: --device %s given more than once; reporting each device once\n", list.c_str());
  flags.devices = std::move(unique);
}

// Before any work: an out-of-range --device or a missing device is an error naming it.
void check(const MetricsFlags& flags) {
  try {
    cudascope::metrics::check_devices(options_from(flags));
  } catch (const std::out_of_range& e) {
    throw std::runtime_error(std::string("--device: ") + e.what());
  }
}

void add_common_flags(CLI::App* sub, MetricsFlags& flags) {
  sub->add_flag("--allocator", flags.allocator,
                "Also report this process's caching-allocator statistics (for programs that embed the exporter)");
  sub->add_flag("--no-health", flags.no_health, "Leave out device health (NVML) figures");
  sub->add_option("--device", flags.devices, "Devices to report (default: all)")
      ->check(cudascope::cli::CountUpTo(1023));  // '' is refused, not taken for "all"
  sub->add_option("--job", flags.job, "A job label on every series");
}

// The server for --bind: a malformed address, or one this machine cannot listen on, is a
// usage error (exit 2) naming the flag, as a bad value of any other flag is.
std::unique_ptr<cudascope::metrics::MetricsServer> server_on_bind(const MetricsFlags& flags) {
  try {
    return std::make_unique<cudascope::metrics::MetricsServer>(flags.bind, options_from(flags));
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--bind", e.what());
  } catch (const std::runtime_error& e) {
    throw CLI::ValidationError("--bind", e.what());
  }
}

void serve(const MetricsFlags& flags) {
  // Block the stop signals first so the server's threads never take them; wait for one below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  check(flags);
  const std::unique_ptr<cudascope::metrics::MetricsServer> server = server_on_bind(flags);
  // The devices reported, not those the backend has: --device 0 serves one of them.
  const int devices = flags.devices.empty() ? cudascope::cuda::device_count() : static_cast<int>(flags.devices.size());
  // The address with the port listened on: with port 0, the one the system picked.
  std::fprintf(stderr, "cudascope: serving metrics of %d device(s) on the %s backend at http://%s/metrics (port %d); "
               "Ctrl-C stops\n",
               devices, cudascope::cuda::backend_name().c_str(), server->address().c_str(), server->port());
  int received = 0;
  sigwait(&stop_signals, &received);
  std::fprintf(stderr, "cudascope: stopped serving metrics (signal %d)\n", received);
}

}  // namespace

CUDASCOPE_COMMAND(metrics, 60) {
  static MetricsFlags flags;
  CLI::App* sub = app.add_subcommand("metrics", "Print the current metrics once, in Prometheus text format");
  add_common_flags(sub, flags);
  sub->callback([] {
    drop_repeated_devices(flags);
    check(flags);
    std::fputs(cudascope::metrics::render_metrics(options_from(flags)).c_str(), stdout);
  });
}

CUDASCOPE_COMMAND(serve, 61) {
  static MetricsFlags flags;
  CLI::App* sub = app.add_subcommand("serve", "Serve device metrics for Prometheus at http://BIND/metrics");
  sub->add_option("--bind", flags.bind, "address:port to listen on (port 0 picks one; 0.0.0.0:PORT exposes it to the network)")->capture_default_str();
  constexpr std::uint64_t kHourInMs = 3600 * 1000;
  flags.health_interval_ms = 1000;
  sub->add_option("--health-interval-ms", flags.health_interval_ms,
                  "How often a background thread reads device health; scrapes show the latest reading, so a "
                  "scrape costs no NVML call (0: read at each scrape)")
      ->capture_default_str()
      ->check(cudascope::cli::CountUpTo(kHourInMs));
  add_common_flags(sub, flags);
  sub->callback([] {
    drop_repeated_devices(flags);
    serve(flags);
  });
}
