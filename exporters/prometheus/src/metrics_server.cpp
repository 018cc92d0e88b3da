#include <cudascope/metrics/metrics.h>

#include "runtime_collector.h"

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <cstdio>
#include <stdexcept>

namespace cudascope::metrics {

std::string render_metrics(const MetricsOptions& options) {
  const detail::RuntimeCollector collector(options);
  return prometheus::TextSerializer().Serialize(collector.Collect());
}

struct MetricsServer::Impl {
  std::shared_ptr<detail::RuntimeCollector> collector;
  std::unique_ptr<prometheus::Exposer> exposer;
};

MetricsServer::MetricsServer(const std::string& bind, MetricsOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->collector = std::make_shared<detail::RuntimeCollector>(std::move(options));
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(bind);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve metrics on " + bind + ": " + e.what());
  }
  impl_->exposer->RegisterCollectable(impl_->collector);
}

MetricsServer::~MetricsServer() = default;

int MetricsServer::port() const {
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

}  // namespace cudascope::metrics

// Entry point the runtime calls when CUDASCOPE_METRICS=address:port is set (tool_loader.cpp):
// serves this process's figures until exit. Returns 0 on success.
extern "C" __attribute__((visibility("default"))) int cudascope_metrics_autostart(const char* bind) {
  static std::unique_ptr<cudascope::metrics::MetricsServer> server;
  if (server) return 0;
  try {
    server = std::make_unique<cudascope::metrics::MetricsServer>(bind);
    std::fprintf(stderr, "cudascope: serving metrics at http://%s/metrics (port %d)\n", bind, server->port());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: %s\n", e.what());
    return 1;
  }
}
