#include "metrics_text.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstdint>
#include <sstream>

namespace cudascope::testing {

std::vector<Sample> parse_exposition(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    std::size_t at = line.find_first_of("{ ");
    sample.name = line.substr(0, at);
    if (at != std::string::npos && line[at] == '{') {
      const std::size_t close = line.find('}', at);
      std::string labels = line.substr(at + 1, close - at - 1);
      std::size_t pos = 0;
      while (pos < labels.size()) {
        const std::size_t eq = labels.find('=', pos);
        const std::size_t open_quote = labels.find('"', eq);
        const std::size_t close_quote = labels.find('"', open_quote + 1);
        sample.labels[labels.substr(pos, eq - pos)] = labels.substr(open_quote + 1, close_quote - open_quote - 1);
        pos = close_quote + 2;  // past the quote and the comma
      }
      at = close + 1;
    }
    sample.value = std::stod(line.substr(at + 1));
    samples.push_back(std::move(sample));
  }
  return samples;
}

std::optional<double> find_sample(const std::vector<Sample>& samples, const std::string& name,
                                  const std::map<std::string, std::string>& wanted) {
  for (const Sample& sample : samples) {
    if (sample.name != name) continue;
    bool matches = true;
    for (const auto& [key, value] : wanted) {
      auto found = sample.labels.find(key);
      if (found == sample.labels.end() || found->second != value) matches = false;
    }
    if (matches) return sample.value;
  }
  return std::nullopt;
}

std::optional<std::string> http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return std::nullopt;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string response;
  char buffer[8192];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos || body == std::string::npos) {
    return std::nullopt;
  }
  return response.substr(body + 4);
}

int idle_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

std::optional<std::string> http_exchange(int port, const std::string& request, int timeout_ms) {
  const int fd = idle_connection(port);
  if (fd < 0) return std::nullopt;
  timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (!request.empty() && write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string response;
  char buffer[8192];
  ssize_t n = 0;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, static_cast<std::size_t>(n));
  close(fd);
  if (n < 0) return std::nullopt;  // timed out before the server closed
  return response;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

bool have_promtool() { return std::system("command -v promtool > /dev/null 2>&1") == 0; }

}  // namespace cudascope::testing
