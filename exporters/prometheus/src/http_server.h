#pragma once
// A small HTTP/1.x server for /metrics: one thread polls every connection, so clients that
// connect and send nothing (or read slowly) cannot hold the scraper back. civetweb, which
// prometheus-cpp's Exposer uses, gives each connection a worker thread: a few idle clients
// there starve every scrape until their request timeout.
//
// Limits (each a protection, not a tuning knob):
//   - a request (line and headers) must arrive within request_timeout and fit in 8 KiB;
//     otherwise the connection is closed (408 / 431);
//   - a response must be taken by the client within request_timeout after it is ready;
//   - at most max_connections at once: a new one closes the oldest that has sent no request;
//   - one request per connection (Connection: close), methods GET and HEAD only.
// Handlers run on the server thread, one at a time, and should return within milliseconds.
//
// Thread-safety: construct and destroy from one thread; handlers are called on the server's.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace cudascope::metrics::detail {

struct HttpRequest {
  std::string method;  // GET or HEAD
  std::string path;    // without the query
  std::string query;   // after '?', undecoded
  bool from_loopback = false;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;
// Asked for paths `routes` does not hold; nullopt: 404.
using HttpFallback = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

struct HttpServerLimits {
  std::chrono::milliseconds request_timeout{5000};
  std::size_t max_connections = 1024;
};

class HttpServer {
 public:
  // Listens on `bind` ("address:port", "[v6]:port" or "host:port"; port 0 picks a free one).
  // Throws std::invalid_argument for a malformed address and std::runtime_error when it
  // cannot listen; both messages name `bind`.
  HttpServer(const std::string& bind, std::map<std::string, HttpHandler> routes, HttpServerLimits limits = {},
             HttpFallback fallback = nullptr);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudascope::metrics::detail
