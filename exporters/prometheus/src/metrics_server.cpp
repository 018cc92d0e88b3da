#include <cudascope/metrics/metrics.h>

#include "health_families.h"
#include "http_server.h"
#include "runtime_collector.h"

#include <prometheus/text_serializer.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace cudascope::metrics {

std::string render_metrics(const MetricsOptions& options) {
  check_devices(options);
  const detail::RuntimeCollector collector(options);
  return prometheus::TextSerializer().Serialize(collector.Collect());
}

std::string render_device_health(const cuda::DeviceTelemetry& figures, int device) {
  detail::Families families;
  detail::add_health(families, device, figures, {{"device", std::to_string(device)}, {"host", detail::host_name()}},
                     /*log_absent=*/false);
  return prometheus::TextSerializer().Serialize(families.take());
}

struct MetricsServer::Impl {
  std::string bind;  // as asked for: port 0 stays 0 here
  std::mutex mutex;
  std::vector<std::function<std::string()>> sources;
  std::map<std::string, Handler> handlers;
  std::unique_ptr<detail::HttpServer> http;  // last: its thread stops before the rest is destroyed

  explicit Impl(const std::string& bind_text) : bind(bind_text) {
    std::map<std::string, detail::HttpHandler> routes;
    routes["/metrics"] = [this](const detail::HttpRequest&) {
      detail::HttpResponse response;
      response.content_type = "text/plain; version=0.0.4; charset=utf-8";
      std::lock_guard lock(mutex);
      for (const auto& source : sources) response.body += source();
      return response;
    };
    routes["/"] = [](const detail::HttpRequest&) {
      return detail::HttpResponse{200, "text/plain; charset=utf-8", "cudascope metrics: see /metrics\n"};
    };
    http = std::make_unique<detail::HttpServer>(bind, std::move(routes), detail::HttpServerLimits{},
                                                [this](const detail::HttpRequest& request) { return extra(request); });
  }

  // Paths added by add_handler after the server started.
  std::optional<detail::HttpResponse> extra(const detail::HttpRequest& request) {
    Handler handler;
    {
      std::lock_guard lock(mutex);
      const auto found = handlers.find(request.path);
      if (found == handlers.end()) return std::nullopt;
      handler = found->second;
    }
    auto [status, body] = handler(request.query, request.from_loopback);
    return detail::HttpResponse{status, "text/plain; charset=utf-8", std::move(body)};
  }

};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::MetricsServer(const std::string& bind, MetricsOptions options) {
  check_devices(options);
  impl_ = std::make_unique<Impl>(bind);
  auto collector = std::make_shared<detail::RuntimeCollector>(std::move(options));
  add_source([collector] { return prometheus::TextSerializer().Serialize(collector->Collect()); });
}

std::unique_ptr<MetricsServer> MetricsServer::without_sources(const std::string& bind) {
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::make_unique<Impl>(bind)));
}

MetricsServer::~MetricsServer() = default;

void MetricsServer::add_source(std::function<std::string()> render) {
  std::lock_guard lock(impl_->mutex);
  impl_->sources.push_back(std::move(render));
}

void MetricsServer::add_handler(const std::string& path, Handler handler) {
  std::lock_guard lock(impl_->mutex);
  impl_->handlers[path] = std::move(handler);
}

int MetricsServer::port() const { return impl_->http->port(); }

std::string MetricsServer::address() const {
  // The server parsed `bind` already: the port is whatever follows its last ':' ("[::1]:0" too).
  const std::string& bind = impl_->bind;
  return bind.substr(0, bind.rfind(':') + 1) + std::to_string(port());
}

MetricsServer& process_server(const std::string& bind) {
  static std::mutex mutex;
  static MetricsServer* server = nullptr;  // never destroyed: scrapes may come until exit
  static std::string bound;
  std::lock_guard lock(mutex);
  if (server == nullptr) {
    server = MetricsServer::without_sources(bind).release();
    bound = bind;
  } else if (bind != bound) {
    throw std::invalid_argument("this process already serves metrics on " + bound + " (asked for " + bind + ")");
  }
  return *server;
}

}  // namespace cudascope::metrics

// Entry point the runtime calls when CUDASCOPE_METRICS=address:port is set (tool_loader.cpp):
// serves this process's own figures (allocator of the devices it uses, pid/rank labels)
// until exit, beside the profiler's when the injection library records it. Returns 0 on success.
extern "C" __attribute__((visibility("default"))) int cudascope_metrics_autostart(const char* bind) {
  static bool started = false;
  if (started) return 0;
  try {
    cudascope::metrics::MetricsOptions options;
    options.process = true;
    options.device_health = false;
    auto collector = std::make_shared<cudascope::metrics::detail::RuntimeCollector>(std::move(options));
    cudascope::metrics::MetricsServer& server = cudascope::metrics::process_server(bind);
    server.add_source([collector] { return prometheus::TextSerializer().Serialize(collector->Collect()); });
    started = true;
    std::fprintf(stderr, "cudascope: serving this process's metrics at http://%s/metrics (port %d)\n", server.address().c_str(),
                 server.port());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s: %s\n", bind, e.what());
    return 1;
  }
}
