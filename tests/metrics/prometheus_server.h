#pragma once
// A real Prometheus server (the Debian package's binary) for tests: started on 127.0.0.1
// with a temporary config and storage, scraping the given targets every second; stopped
// when destroyed. Queries go through its HTTP API.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace cudascope::testing {

// Whether the prometheus binary is on PATH (tests skip, saying so, when it is not).
bool have_prometheus();

class PrometheusServer {
 public:
  // Starts scraping `targets` ("127.0.0.1:port") every second. Throws std::runtime_error
  // when it cannot start or does not answer within 30 s.
  explicit PrometheusServer(const std::vector<std::string>& targets);
  ~PrometheusServer();
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // The body of any GET on its HTTP API (for diagnostics).
  std::optional<std::string> get(const std::string& path) const;
  // The JSON reply of /api/v1/query for `promql` (empty when there is no reply).
  std::optional<nlohmann::json> query(const std::string& promql) const;
  // The single value `promql` evaluates to, once it does (polled until `timeout_s`).
  std::optional<double> wait_for_value(const std::string& promql, double timeout_s,
                                       std::optional<double> wanted = std::nullopt) const;

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  std::string dir_;
};

// The PromQL of every panel of the Grafana dashboard, with its template variables matching
// everything.
std::vector<std::string> dashboard_queries(const std::string& dashboard_path);

std::string url_encode(const std::string& text);

}  // namespace cudascope::testing
