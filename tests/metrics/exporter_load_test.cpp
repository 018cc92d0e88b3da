// The metrics endpoint under load and faults: clients that connect and send nothing, many
// at once, malformed and oversized requests. Scrapes must keep answering, without waiting on
// the silent clients (whose requests time out only after seconds).
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/metrics/metrics.h>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace metrics = cudascope::metrics;
using cudascope::testing::http_exchange;
using cudascope::testing::idle_connection;
using namespace std::chrono_literals;

namespace {

// Idle connections held open for a test.
class IdleClients {
 public:
  IdleClients(int port, int count) {
    for (int i = 0; i < count; ++i) {
      const int fd = idle_connection(port);
      if (fd >= 0) fds_.push_back(fd);
    }
  }
  ~IdleClients() {
    for (int fd : fds_) close(fd);
  }
  std::size_t size() const { return fds_.size(); }
  // None was closed or answered by the server: it has not timed their requests out yet.
  bool all_open() const {
    return std::all_of(fds_.begin(), fds_.end(), [](int fd) {
      pollfd p{fd, POLLIN | POLLRDHUP, 0};
      return poll(&p, 1, 0) == 0;
    });
  }

 private:
  std::vector<int> fds_;
};

// A scrape's full response and how long it took.
struct TimedScrape {
  std::optional<std::string> response;
  std::chrono::milliseconds took{};
};

TimedScrape scrape(int port) {
  const auto start = std::chrono::steady_clock::now();
  TimedScrape result;
  result.response = http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5000);
  result.took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  return result;
}

std::string status_line(const std::optional<std::string>& response) {
  return response ? response->substr(0, response->find("\r\n")) : "(no response)";
}

// The test holds 500 client ends and the server 500 more in this one process.
void allow_descriptors(rlim_t wanted) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    limit.rlim_cur = std::min(wanted, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// The median time of five scrapes, each of which must be answered.
std::chrono::milliseconds median_scrape_time(int port, const char* when) {
  std::vector<std::chrono::milliseconds> took;
  for (int i = 0; i < 5; ++i) {
    const TimedScrape s = scrape(port);
    EXPECT_EQ(status_line(s.response), "HTTP/1.1 200 OK") << "scrape " << i << " " << when;
    if (s.response) {
      EXPECT_NE(s.response->find("cudascope_device_info"), std::string::npos) << when;
    }
    took.push_back(s.took);
  }
  std::sort(took.begin(), took.end());
  return took[took.size() / 2];
}

// Scrapes behind `count` silent clients are answered while those clients are still connected
// (a server that served connections in turn would answer only once their requests timed out,
// after seconds), and take about as long as scrapes without them: the bound is loose enough
// for a loaded machine, far below the request timeout a blocked scrape would wait for.
void expect_silent_clients_do_not_block(int count) {
  metrics::MetricsServer server("127.0.0.1:0");
  const auto alone = median_scrape_time(server.port(), "without silent clients");
  const IdleClients silent(server.port(), count);
  ASSERT_EQ(silent.size(), static_cast<std::size_t>(count)) << "could not open the connections (descriptor limit?)";
  const auto behind = median_scrape_time(server.port(), "behind silent clients");
  EXPECT_TRUE(silent.all_open()) << "the server closed silent clients before the scrapes were answered";
  EXPECT_LE(behind, alone * 4 + 500ms) << "median scrape " << alone.count() << " ms alone, " << behind.count()
                                       << " ms behind " << count << " silent clients";
}

}  // namespace

TEST(ExporterLoadTest, TwoSilentClientsDoNotBlockScrapes) { expect_silent_clients_do_not_block(2); }

TEST(ExporterLoadTest, FiveHundredSilentClientsDoNotBlockScrapes) {
  allow_descriptors(2048);
  expect_silent_clients_do_not_block(500);
}

TEST(ExporterLoadTest, MalformedRequestsGetAnErrorAndScrapesGoOn) {
  metrics::MetricsServer server("127.0.0.1:0");
  const struct {
    std::string request;
    std::string status;
  } cases[] = {
      {"GARBAGE\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {"GET /metrics SPDY/9\r\n\r\n", "HTTP/1.1 400 Bad Request"},
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), "HTTP/1.1 400 Bad Request"},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "HTTP/1.1 405 Method Not Allowed"},
      {"GET /nothing-here HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"},
      {"GET /metrics HTTP/1.1\r\nX-Long: " + std::string(9000, 'a') + "\r\n\r\n",
       "HTTP/1.1 431 Request Header Fields Too Large"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(status_line(http_exchange(server.port(), c.request)), c.status) << c.request.substr(0, 40);
  }
  const auto head = http_exchange(server.port(), "HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(status_line(head), "HTTP/1.1 200 OK");
  EXPECT_EQ(head->substr(head->find("\r\n\r\n") + 4), "") << "HEAD has no body";
  EXPECT_EQ(status_line(scrape(server.port()).response), "HTTP/1.1 200 OK");
}

TEST(ExporterLoadTest, AnUnfinishedRequestIsClosedAfterTheRequestTimeout) {
  metrics::MetricsServer server("127.0.0.1:0");
  const auto start = std::chrono::steady_clock::now();
  const auto response = http_exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n", 15000);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(status_line(response), "HTTP/1.1 408 Request Timeout");
  EXPECT_GE(took, 4s);
  EXPECT_LT(took, 10s);
}

TEST(ExporterLoadTest, BindMustBeAnAddressAndPort) {
  for (const std::string bind : {"nonsense", "127.0.0.1", "127.0.0.1:port", "127.0.0.1:99999", ":9400"}) {
    try {
      metrics::MetricsServer server(bind);
      ADD_FAILURE() << bind << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("'" + bind + "'"));
    }
  }
  EXPECT_THROW(metrics::MetricsServer("no-such-host.invalid:9400"), std::invalid_argument);
}

TEST(ExporterLoadTest, AnotherDevicesCountIsAnErrorBeforeServing) {
  metrics::MetricsOptions options;
  options.devices = {cudascope::cuda::device_count()};
  try {
    metrics::MetricsServer server("127.0.0.1:0", options);
    FAIL() << "device " << options.devices[0] << " was accepted";
  } catch (const std::out_of_range& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("device " + std::to_string(options.devices[0])));
    EXPECT_THAT(e.what(), ::testing::HasSubstr(std::to_string(cudascope::cuda::device_count()) + " device(s)"));
  }
  options.devices = {-1};
  EXPECT_THROW(metrics::render_metrics(options), std::out_of_range);
}

// A child forked without exec (a data-loader worker) must not keep the port: once the
// serving process is gone, the port is free again.
TEST(ExporterLoadTest, AForkedChildDoesNotKeepTheListeningSocket) {
  int port = 0;
  pid_t child = 0;
  {
    metrics::MetricsServer server("127.0.0.1:0");
    port = server.port();
    child = fork();
    if (child == 0) {
      sleep(3);
      _exit(0);
    }
  }
  // The server is gone in this process; the sleeping child must not hold the port.
  const int fd = idle_connection(port);
  const bool refused = fd < 0;
  if (fd >= 0) close(fd);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(refused) << "a connection to port " << port << " was accepted by the forked child's copy";
}
