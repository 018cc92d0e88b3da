#pragma once
// Reads Prometheus' text exposition format back for assertions, and fetches over HTTP.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cudascope::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> parse_exposition(const std::string& text);

// The value of the one sample named `name` whose labels include `wanted`; empty if none.
std::optional<double> find_sample(const std::vector<Sample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& wanted);

// A plain HTTP/1.0 GET to 127.0.0.1:port; the body, or empty on any failure.
std::optional<std::string> http_get(int port, const std::string& path);

// Sends `request` as is to 127.0.0.1:port and returns the whole response (status line,
// headers, body) once the server closes; empty when it cannot connect or `timeout` passes.
std::optional<std::string> http_exchange(int port, const std::string& request, int timeout_ms = 5000);

// A TCP connection to 127.0.0.1:port that sends nothing until destroyed; -1 if it failed.
int idle_connection(int port);

// A TCP port that was free a moment ago.
int free_port();

// Whether promtool (Debian package prometheus) is on PATH; tests that run it skip, saying
// so, where it is not (CI installs it).
bool have_promtool();

}  // namespace cudascope::testing
