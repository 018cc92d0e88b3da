#include "prometheus_server.h"

#include "metrics_text.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace cudascope::testing {

bool have_prometheus() { return std::system("command -v prometheus > /dev/null 2>&1") == 0; }

std::string url_encode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '-' || c == '.') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

PrometheusServer::PrometheusServer(const std::vector<std::string>& targets) {
  char pattern[] = "/tmp/cudascope-prometheus-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  port_ = free_port();
  {
    // honor_labels: the exporters' `job` label (cudascope run --job) is kept, not renamed exported_job.
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
           << "scrape_configs:\n  - job_name: cudascope\n    honor_labels: true\n    static_configs:\n      - targets: [";
    for (std::size_t i = 0; i < targets.size(); ++i) config << (i ? ", '" : "'") << targets[i] << "'";
    config << "]\n";
  }
  const std::string config = "--config.file=" + dir_ + "/prometheus.yml";
  const std::string storage = "--storage.tsdb.path=" + dir_ + "/data";
  const std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
  std::vector<const char*> argv{"prometheus", config.c_str(), storage.c_str(), listen.c_str(), "--log.level=warn", nullptr};
  if (posix_spawnp(&pid_, "prometheus", nullptr, nullptr, const_cast<char* const*>(argv.data()), environ) != 0) {
    throw std::runtime_error("cannot start prometheus");
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  // Ready, and its scrape manager has taken the targets (it applies them on a 5 s tick).
  const auto scraping = [&] {
    const auto body = http_get(port_, "/api/v1/targets");
    const auto reply = body ? nlohmann::json::parse(*body, nullptr, false) : nlohmann::json();
    return !reply.is_discarded() && reply.contains("data") &&
           reply["data"]["activeTargets"].size() == targets.size();
  };
  while (!scraping()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("prometheus not scraping within 30 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::system(("rm -rf '" + dir_ + "'").c_str());
}

std::optional<std::string> PrometheusServer::get(const std::string& path) const { return http_get(port_, path); }

std::optional<nlohmann::json> PrometheusServer::query(const std::string& promql) const {
  const auto body = http_get(port_, "/api/v1/query?query=" + url_encode(promql));
  if (!body) return std::nullopt;
  auto reply = nlohmann::json::parse(*body, nullptr, false);
  if (reply.is_discarded()) return std::nullopt;
  return reply;
}

std::optional<double> PrometheusServer::wait_for_value(const std::string& promql, double timeout_s,
                                                       std::optional<double> wanted) const {
  std::optional<double> last;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto reply = query(promql);
    if (reply && reply->value("status", "") == "success" && !(*reply)["data"]["result"].empty()) {
      last = std::stod((*reply)["data"]["result"][0]["value"][1].get<std::string>());
      if (!wanted || *last == *wanted) return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return last;
}

std::vector<std::string> dashboard_queries(const std::string& dashboard_path) {
  std::ifstream file(dashboard_path);
  const auto dashboard = nlohmann::json::parse(file);
  std::vector<std::string> queries;
  const std::regex variable(R"(\$\{?[a-z_]+\}?)");
  for (const auto& panel : dashboard.at("panels")) {
    if (!panel.contains("targets")) continue;  // rows
    for (const auto& target : panel.at("targets")) {
      queries.push_back(std::regex_replace(target.at("expr").get<std::string>(), variable, ".*"));
    }
  }
  return queries;
}

}  // namespace cudascope::testing
