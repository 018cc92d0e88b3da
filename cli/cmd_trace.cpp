// `cudascope trace --pid PID --duration 10s -o window.json`: a trace window of a running
// program recorded with live metrics only (`cudascope run --metrics ADDR:PORT --no-trace`).
// Reads the program's metrics address and its job token from its environment (which only
// the job's user, or root, may read: that is what makes the caller the owner), asks over
// loopback for GET /trace?token=T&duration=S, waits until the window is written into the
// job's window directory (inject/trace_window.h), then copies it to -o and removes it.
#include "checks.h"
#include "command.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct TraceOptions {
  int pid = 0;
  std::string duration = "10s";
  std::string output = "window.json";
};

// "10s", "500ms", "2m" or a number of seconds. Anything else is a usage error (exit 2).
double parse_duration(const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  const std::string unit = text.substr(used);
  const std::map<std::string, double> scale{{"", 1}, {"s", 1}, {"ms", 1e-3}, {"m", 60}};
  const auto found = scale.find(unit);
  if (used == 0 || found == scale.end() || !(value > 0) || value * found->second > 3600) {
    throw CLI::ValidationError("--duration '" + text + "': expected a time up to 1 hour, e.g. 10s, 500ms, 2m");
  }
  return value * found->second;
}

std::map<std::string, std::string> environment_of(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/environ";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--pid " + std::to_string(pid) + ": no such process of this user (" + path + ")");
  std::map<std::string, std::string> out;
  for (std::string entry; std::getline(in, entry, '\0');) {
    const std::size_t eq = entry.find('=');
    if (eq != std::string::npos) out[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return out;
}

// `pid` itself, or for the `cudascope run` wrapper (whose environment has no
// CUDASCOPE_METRICS) the descendant it runs the program in (three levels down at most).
int program_pid(int pid, int depth = 0) {
  if (environment_of(pid).count("CUDASCOPE_METRICS") != 0 || depth == 3) return pid;
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  for (int child; children >> child;) {
    const int found = program_pid(child, depth + 1);
    if (environment_of(found).count("CUDASCOPE_METRICS") != 0) return found;
  }
  return pid;
}

struct Endpoint {
  int port = 0;
  std::string token;  // the job's, for /trace
};

// The loopback port of the program's metrics server, from CUDASCOPE_METRICS, and its token.
// GET `path` from 127.0.0.1:port: {status, body}; status 0 when the program did not answer.
std::pair<int, std::string> http_get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return {0, "cannot connect to 127.0.0.1:" + std::to_string(port)};
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  std::string response;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || body == std::string::npos) return {0, "no HTTP answer"};
  return {std::atoi(response.c_str() + 9), response.substr(body + 4)};
}

// The IPv4 TCP ports `pid` listens on: its sockets (/proc/PID/fd) among the listening ones of
// its network namespace (/proc/PID/net/tcp, state 0A). For --metrics ADDRESS:0, where each
// process of the program binds a port of its own that its environment does not name.
std::vector<int> listening_ports(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code error;
  for (const auto& fd : std::filesystem::directory_iterator(proc + "/fd", error)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (target.starts_with("socket:[") && target.ends_with("]")) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<int> ports;
  std::ifstream tcp(proc + "/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the column names
  while (std::getline(tcp, line)) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    const std::size_t colon = local.find(':');
    if (state != "0A" || colon == std::string::npos || !inodes.contains(inode)) continue;
    ports.push_back(static_cast<int>(std::strtol(local.c_str() + colon + 1, nullptr, 16)));
  }
  return ports;
}

// Of the ports `pid` listens on, the one whose server answers its trace-window token.
int trace_window_port(int pid, const std::string& token, const std::string& who) {
  for (const int port : listening_ports(pid)) {
    if (http_get(port, "/trace?token=" + token).first == 200) return port;
  }
  throw std::runtime_error(who + ": it serves its metrics on a port the system picked (--metrics ADDRESS:0), and "
                           "none of the ports it listens on answers trace windows (yet: try again once it has started)");
}

Endpoint trace_endpoint(int pid) {
  const int program = program_pid(pid);  // the process that serves, below a launcher given instead
  const auto env = environment_of(program);
  const std::string who = "--pid " + std::to_string(pid);
  const auto bind = env.find("CUDASCOPE_METRICS");
  if (bind == env.end()) {
    throw std::runtime_error(who + ": the process serves no live metrics (start it with "
                             "`cudascope run --metrics 127.0.0.1:PORT --no-trace -- ...`)");
  }
  if (env.count("CUDASCOPE_NO_TRACE") == 0) {
    throw std::runtime_error(who + ": the process already records a full trace (run it with --no-trace for windows)");
  }
  const auto token = env.find("CUDASCOPE_TRACE_TOKEN");
  if (token == env.end() || token->second.empty()) {
    throw std::runtime_error(who + ": the process has no trace-window token (start it with `cudascope run --metrics "
                             "127.0.0.1:PORT --no-trace -- ...` of this version)");
  }
  const std::size_t colon = bind->second.rfind(':');
  const std::string host = bind->second.substr(0, colon);
  const int port = colon == std::string::npos ? -1 : std::atoi(bind->second.c_str() + colon + 1);
  const bool loopback = host == "0.0.0.0" || host == "localhost" || host.rfind("127.", 0) == 0;
  if (port < 0 || !loopback) {
    throw std::runtime_error(who + ": its metrics address " + bind->second +
                             " is not reachable over IPv4 loopback (trace windows answer loopback clients only)");
  }
  return {port == 0 ? trace_window_port(program, token->second, who) : port, token->second};
}

// The line of the /trace status that starts with `key` ("last", "failed"), without the key.
std::string status_field(const std::string& status, const std::string& key) {
  const std::string prefix = key + " ";
  for (std::size_t at = 0; at < status.size();) {
    const std::size_t eol = std::min(status.find('\n', at), status.size());
    if (status.compare(at, prefix.size(), prefix) == 0) return status.substr(at + prefix.size(), eol - at - prefix.size());
    at = eol + 1;
  }
  return {};
}

// Copies the window file to -o (written as any output: through a link, over a file), every
// write checked, then removes the window file.
void deliver(const std::string& window, const std::string& output) {
  const int in = open(window.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) throw std::runtime_error("cannot read the window " + window + ": " + std::strerror(errno));
  const int out = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (out < 0) {
    const int error = errno;
    close(in);
    throw std::runtime_error("cannot write '" + output + "': " + std::strerror(error) + " (the window is in " + window + ")");
  }
  std::string problem;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(in, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) problem = "cannot read the window " + window + ": " + std::strerror(errno);
    if (n <= 0) break;
    for (ssize_t done = 0; done < n && problem.empty();) {
      const ssize_t w = write(out, buffer + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) problem = "cannot write '" + output + "': " + std::strerror(w < 0 ? errno : ENOSPC);
      else done += w;
    }
    if (!problem.empty()) break;
  }
  close(in);
  if (close(out) != 0 && problem.empty()) problem = "cannot write '" + output + "': " + std::strerror(errno);
  if (!problem.empty()) throw std::runtime_error(problem + " (the window is in " + window + ")");
  unlink(window.c_str());
}

int record_window(const TraceOptions& options) {
  const double seconds = parse_duration(options.duration);
  const std::string output = std::filesystem::absolute(options.output).string();
  if (const std::string problem = cudascope::cli::output_file_problem(output); !problem.empty()) {
    throw CLI::ValidationError("-o " + output + ": " + problem);
  }
  const Endpoint endpoint = trace_endpoint(options.pid);
  const std::string token = "token=" + endpoint.token;
  const auto before = http_get(endpoint.port, "/trace?" + token);
  if (before.first != 200) throw std::runtime_error("the program's /trace did not answer: " + before.second);
  char number[32];
  std::snprintf(number, sizeof number, "%.3f", seconds);
  const bool gzip = output.ends_with(".gz");
  const auto started = http_get(endpoint.port, "/trace?" + token + "&duration=" + number + (gzip ? "&gzip=1" : ""));
  if (started.first != 200 || started.second.rfind("recording ", 0) != 0) {
    throw std::runtime_error("the program did not start a window: " + started.second);
  }
  std::string window = started.second.substr(10);
  while (!window.empty() && window.back() == '\n') window.pop_back();
  std::fprintf(stderr, "cudascope: recording process %d for %s into %s\n", options.pid, options.duration.c_str(),
               window.c_str());
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  // The window closes at the program's next flush (every 200 ms); allow for a busy machine.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto status = http_get(endpoint.port, "/trace?" + token);
    if (status.first == 0) {
      deliver(window, output);
      std::fprintf(stderr, "cudascope: the program ended; %s holds what it recorded\n", output.c_str());
      return 0;
    }
    if (status.second.rfind("idle", 0) == 0) {
      if (status_field(status.second, "last") == window && !status_field(status.second, "failed").empty()) {
        throw std::runtime_error("the window " + window + " stopped early: " + status_field(status.second, "failed"));
      }
      deliver(window, output);
      std::fprintf(stderr, "cudascope: trace window written to %s\n", output.c_str());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the window " + window + " did not close within 30 s of its end");
}

}  // namespace

CUDASCOPE_COMMAND(trace, 31) {
  static TraceOptions options;
  CLI::App* sub = app.add_subcommand(
      "trace", "Record a trace window of a running program (one started with `cudascope run --metrics ADDR:PORT --no-trace`)");
  sub->add_option("--pid", options.pid, "The program's process id")->required()->check(cudascope::cli::ProcessId());
  sub->add_option("--duration", options.duration, "How long to record: 10s, 500ms, 2m")->capture_default_str();
  sub->add_option("-o,--output", options.output, "Trace file (.json or .json.gz)")
      ->capture_default_str()
      ->check(cudascope::cli::WritableFile());
  sub->callback([] { cudascope::cli::set_exit_code(record_window(options)); });
}
