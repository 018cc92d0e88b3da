#include "http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cudascope::metrics::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxRequestBytes = 8192;

struct BindAddress {
  std::string host;
  std::string port;
};

// "host:port" or "[v6]:port"; the port all digits, at most 65535.
BindAddress parse_bind(const std::string& bind) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("'" + bind + "' is not an address:port to listen on (" + why + ")");
  };
  BindAddress out;
  std::size_t colon;
  if (!bind.empty() && bind.front() == '[') {
    const std::size_t close = bind.find(']');
    if (close == std::string::npos || close + 1 >= bind.size() || bind[close + 1] != ':') throw bad("expected [address]:port");
    out.host = bind.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = bind.rfind(':');
    if (colon == std::string::npos) throw bad("no ':port'");
    out.host = bind.substr(0, colon);
  }
  out.port = bind.substr(colon + 1);
  if (out.host.empty()) throw bad("no address before ':'; use 127.0.0.1, or 0.0.0.0 to expose it");
  if (out.port.empty() || out.port.size() > 5 ||
      !std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      std::stoi(out.port) > 65535) {
    throw bad("the port must be a number from 0 to 65535");
  }
  return out;
}

int listen_on(const std::string& bind) {
  const BindAddress address = parse_bind(bind);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(address.host.c_str(), address.port.c_str(), &hints, &found); rc != 0) {
    throw std::invalid_argument("'" + bind + "': cannot resolve '" + address.host + "': " + gai_strerror(rc));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 512) != 0) {
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) throw std::runtime_error("cannot listen on " + bind + ": " + error);
  return fd;
}

bool is_loopback(const sockaddr_storage& peer) {
  if (peer.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&peer);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&peer);
    if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr) && v6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 409: return "Conflict";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

std::string format_response(const HttpResponse& response, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " + reason(response.status) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  if (response.status == 405) out += "Allow: GET, HEAD\r\n";
  out += "Connection: close\r\n\r\n";
  if (!head) out += response.body;
  return out;
}

HttpResponse error_response(int status, const std::string& why) { return {status, "text/plain; charset=utf-8", why + "\n"}; }

// Listening sockets of this process. A child forked without exec (a data-loader worker) must
// never serve or hold the port: it closes its copies in its fork handler, and the parent's
// fork() returns only once the child has done so (the child's end of a pipe closes), so when
// the serving process later closes its listener the port is free at once.
constexpr int kMaxListeners = 16;
std::atomic<int> listeners[kMaxListeners];
// The handshake of the fork in progress. glibc runs the prepare, parent and child handlers
// of one fork under one lock, so forks from several threads never share it.
int fork_handshake[2] = {-1, -1};

bool has_listeners() {
  return std::any_of(std::begin(listeners), std::end(listeners), [](const auto& fd) { return fd.load() >= 0; });
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void prepare_fork() {
  if (has_listeners() && pipe2(fork_handshake, O_CLOEXEC) != 0) fork_handshake[0] = fork_handshake[1] = -1;
}

void close_listeners_in_child() {
  for (auto& fd : listeners) {
    const int value = fd.exchange(-1);
    if (value >= 0) close(value);
  }
  close_fd(fork_handshake[0]);
  close_fd(fork_handshake[1]);  // the parent's read now ends
}

void wait_for_child_to_close_listeners() {
  if (fork_handshake[0] < 0) return;
  close_fd(fork_handshake[1]);
  char byte;
  // End of file once the child's copy of the write end is closed (at once if fork failed).
  while (read(fork_handshake[0], &byte, 1) < 0 && errno == EINTR) {
  }
  close_fd(fork_handshake[0]);
}

void remember_listener(int fd) {
  static const bool registered = [] {
    for (auto& l : listeners) l.store(-1);
    return pthread_atfork(&prepare_fork, &wait_for_child_to_close_listeners, &close_listeners_in_child) == 0;
  }();
  (void)registered;
  for (auto& l : listeners) {
    int expected = -1;
    if (l.compare_exchange_strong(expected, fd)) return;
  }
}

void forget_listener(int fd) {
  for (auto& l : listeners) {
    int expected = fd;
    l.compare_exchange_strong(expected, -1);
  }
}

struct Connection {
  int fd = -1;
  bool loopback = false;
  bool responding = false;  // the request was read; `out` is being written
  Clock::time_point accepted;
  Clock::time_point deadline;
  std::string in;
  std::string out;
  std::size_t written = 0;
};

}  // namespace

struct HttpServer::Impl {
  int listener = -1;
  int wake[2] = {-1, -1};
  int port = 0;
  HttpServerLimits limits;
  std::map<std::string, HttpHandler> routes;
  HttpFallback fallback;
  std::list<Connection> connections;
  std::thread thread;

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> owners;
    for (;;) {
      fds.assign({{wake[0], POLLIN, 0}, {listener, POLLIN, 0}});
      owners.clear();
      auto next_deadline = Clock::now() + std::chrono::seconds(60);
      for (auto it = connections.begin(); it != connections.end(); ++it) {
        fds.push_back({it->fd, static_cast<short>(it->responding ? POLLOUT : POLLIN), 0});
        owners.push_back(it);
        next_deadline = std::min(next_deadline, it->deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_deadline - Clock::now()).count();
      const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait + 1, 0, 60000)));
      if (ready < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;  // the destructor asks to stop
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents != 0) service(*owners[i - 2]);
      }
      if (fds[1].revents & POLLIN) accept_all();
      expire();
    }
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage peer{};
      socklen_t length = sizeof peer;
      const int fd = accept4(listener, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0 && (errno == EMFILE || errno == ENFILE) && !connections.empty()) {
        evict_oldest_idle();  // out of descriptors: make room rather than spin on the listener
        continue;
      }
      if (fd < 0) return;  // EAGAIN: all taken; anything else: retried on the next poll
      if (connections.size() >= limits.max_connections) evict_oldest_idle();
      Connection c;
      c.fd = fd;
      c.loopback = is_loopback(peer);
      c.accepted = Clock::now();
      c.deadline = c.accepted + limits.request_timeout;
      connections.push_back(std::move(c));
    }
  }

  // Full: the oldest connection still waiting for its request goes (a scraper sends at once).
  void evict_oldest_idle() {
    auto oldest = connections.end();
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      if (!it->responding && (oldest == connections.end() || it->accepted < oldest->accepted)) oldest = it;
    }
    if (oldest == connections.end()) oldest = connections.begin();
    drop(oldest);
    connections.erase(oldest);
  }

  void drop(std::list<Connection>::iterator it) {
    close(it->fd);
    it->fd = -1;
  }

  void expire() {
    const auto now = Clock::now();
    for (auto it = connections.begin(); it != connections.end();) {
      if (it->fd >= 0 && now >= it->deadline) {
        if (!it->responding && !it->in.empty()) {
          // Part of a request came: tell the client why before closing (best effort).
          const std::string reply = format_response(error_response(408, "request not completed in time"), false);
          [[maybe_unused]] const ssize_t n = send(it->fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        }
        drop(it);
      }
      it = it->fd < 0 ? connections.erase(it) : std::next(it);
    }
  }

  void service(Connection& c) {
    if (c.fd < 0) return;
    if (c.responding) return write_some(c);
    char chunk[4096];
    const ssize_t n = recv(c.fd, chunk, sizeof chunk, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      close(c.fd);
      c.fd = -1;
      return;
    }
    if (n < 0) return;
    c.in.append(chunk, static_cast<std::size_t>(n));
    std::size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) end = c.in.find("\n\n");
    if (end == std::string::npos ? c.in.size() > kMaxRequestBytes : end > kMaxRequestBytes) {
      return respond(c, error_response(431, "request headers over 8 KiB"), false);
    }
    if (end == std::string::npos) return;
    answer(c, c.in.substr(0, c.in.find('\n')));
  }

  void answer(Connection& c, std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t first = line.find(' ');
    const std::size_t second = first == std::string::npos ? first : line.find(' ', first + 1);
    if (second == std::string::npos || line.compare(second + 1, 7, "HTTP/1.") != 0 || line.size() != second + 9) {
      return respond(c, error_response(400, "malformed request line"), false);
    }
    HttpRequest request;
    request.method = line.substr(0, first);
    const std::string target = line.substr(first + 1, second - first - 1);
    if (target.empty() || target.front() != '/') return respond(c, error_response(400, "malformed request target"), false);
    const std::size_t question = target.find('?');
    request.path = target.substr(0, question);
    if (question != std::string::npos) request.query = target.substr(question + 1);
    request.from_loopback = c.loopback;
    const bool head = request.method == "HEAD";
    if (request.method != "GET" && !head) return respond(c, error_response(405, "only GET and HEAD"), false);
    const auto route = routes.find(request.path);
    HttpResponse response = error_response(404, "no such path; metrics are at /metrics");
    try {
      if (route != routes.end()) {
        response = route->second(request);
      } else if (fallback) {
        if (auto answer = fallback(request)) response = std::move(*answer);
      }
    } catch (const std::exception& e) {
      response = error_response(500, e.what());
    }
    respond(c, response, head);
  }

  void respond(Connection& c, const HttpResponse& response, bool head) {
    c.out = format_response(response, head);
    c.written = 0;
    c.responding = true;
    c.deadline = Clock::now() + limits.request_timeout;
    write_some(c);
  }

  void write_some(Connection& c) {
    while (c.written < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n <= 0) break;
      c.written += static_cast<std::size_t>(n);
    }
    close(c.fd);
    c.fd = -1;
  }
};

HttpServer::HttpServer(const std::string& bind, std::map<std::string, HttpHandler> routes, HttpServerLimits limits,
                       HttpFallback fallback)
    : impl_(std::make_unique<Impl>()) {
  impl_->fallback = std::move(fallback);
  impl_->listener = listen_on(bind);
  remember_listener(impl_->listener);
  impl_->limits = limits;
  impl_->routes = std::move(routes);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  getsockname(impl_->listener, reinterpret_cast<sockaddr*>(&local), &length);
  impl_->port = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  if (pipe2(impl_->wake, O_CLOEXEC) != 0) {
    forget_listener(impl_->listener);
    close(impl_->listener);
    throw std::runtime_error(std::string("cannot serve on ") + bind + ": pipe: " + std::strerror(errno));
  }
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

HttpServer::~HttpServer() {
  [[maybe_unused]] const ssize_t n = write(impl_->wake[1], "x", 1);
  if (impl_->thread.joinable()) impl_->thread.join();
  for (Connection& c : impl_->connections) {
    if (c.fd >= 0) close(c.fd);
  }
  forget_listener(impl_->listener);
  close(impl_->listener);
  close(impl_->wake[0]);
  close(impl_->wake[1]);
}

int HttpServer::port() const noexcept { return impl_->port; }

}  // namespace cudascope::metrics::detail
