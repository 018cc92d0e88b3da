// MetricsOptions that no other test varies (devices, per_stream = false) and the metrics
// server's paths other than GET /metrics: the index, handlers added with add_handler (query,
// status, HEAD, a throwing handler), and a server without sources fed by add_source.
#include "metrics_text.h"
#include "test_support.h"

#include <cudascope/cuda/memory.h>
#include <cudascope/metrics/metrics.h>

#include <stdexcept>

namespace cudascope::testing {
namespace {

// The set of `label` values among samples named `name`.
std::set<std::string> label_values(const std::vector<Sample>& samples, const std::string& name,
                                   const std::string& label) {
  std::set<std::string> out;
  for (const auto& s : samples) {
    if (s.name == name && s.labels.count(label)) out.insert(s.labels.at(label));
  }
  return out;
}

TEST(MetricsOptionsTest, DevicesSelectsTheReportedDevicesOnly) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  metrics::MetricsOptions options;
  options.devices = {1};
  const auto samples = parse_exposition(metrics::render_metrics(options));
  EXPECT_EQ(label_values(samples, "cudascope_device_info", "device"), std::set<std::string>{"1"});
  EXPECT_EQ(label_values(samples, "cudascope_memory_allocated_bytes", "device"), std::set<std::string>{"1"});
  EXPECT_EQ(label_values(samples, "cudascope_gpu_power_watts", "device"), std::set<std::string>{"1"});
  // Default: every device of the backend.
  const auto all = parse_exposition(metrics::render_metrics());
  EXPECT_EQ(label_values(all, "cudascope_device_info", "device").size(),
            static_cast<std::size_t>(cuda::device_count()));
}

TEST(MetricsOptionsTest, PerStreamFalseLeavesOutTheStreamSeries) {
  cuda::Stream side(0);
  void* on_side = cuda::caching_allocator_alloc(1 << 20, 0, side);
  metrics::MetricsOptions with, without;
  without.per_stream = false;
  const auto on = parse_exposition(metrics::render_metrics(with));
  const auto off = parse_exposition(metrics::render_metrics(without));
  cuda::caching_allocator_delete(on_side);
  const std::string stream = std::to_string(side.id());
  EXPECT_TRUE(find_sample(on, "cudascope_memory_stream_allocated_bytes", {{"stream", stream}}).has_value());
  for (const auto& s : off) {
    EXPECT_EQ(s.name.find("_stream_"), std::string::npos) << s.name << " with per_stream = false";
    EXPECT_EQ(s.labels.count("stream"), 0u) << s.name;
  }
  // The device-wide allocator figures stay.
  EXPECT_TRUE(find_sample(off, "cudascope_memory_allocated_bytes", {{"device", "0"}, {"pool", "all"}}).has_value());
}

TEST(MetricsServerPathsTest, TheIndexPointsAtMetrics) {
  metrics::MetricsServer server("127.0.0.1:0");
  const auto response = http_exchange(server.port(), "GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->rfind("HTTP/1.1 200 OK", 0), 0u) << *response;
  EXPECT_THAT(*response, ::testing::HasSubstr("see /metrics"));
}

TEST(MetricsServerPathsTest, HandlersGetTheQueryAndChooseTheStatus) {
  auto server = metrics::MetricsServer::without_sources("127.0.0.1:0");
  server->add_handler("/echo", [](const std::string& query, bool from_loopback) {
    return std::pair{query == "fail=1" ? 409 : 200, "query=" + query + " loopback=" + (from_loopback ? "yes" : "no")};
  });
  server->add_handler("/throws", [](const std::string&, bool) -> std::pair<int, std::string> {
    throw std::runtime_error("handler broke");
  });
  const int port = server->port();
  EXPECT_EQ(http_get(port, "/echo?a=1&b=x%20y"), "query=a=1&b=x%20y loopback=yes") << "the query arrives undecoded";
  const auto conflict = http_exchange(port, "GET /echo?fail=1 HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->rfind("HTTP/1.1 409", 0), 0u) << *conflict;
  const auto head = http_exchange(port, "HEAD /echo HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->rfind("HTTP/1.1 200", 0), 0u) << *head;
  EXPECT_EQ(head->substr(head->find("\r\n\r\n") + 4), "") << "HEAD has no body";
  const auto broken = http_exchange(port, "GET /throws HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->rfind("HTTP/1.1 500", 0), 0u) << *broken;
  EXPECT_THAT(*broken, ::testing::HasSubstr("handler broke"));
  const auto missing = http_exchange(port, "GET /echo/more HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->rfind("HTTP/1.1 404", 0), 0u) << "paths match exactly";
}

TEST(MetricsServerPathsTest, AServerWithoutSourcesServesWhatIsAdded) {
  auto server = metrics::MetricsServer::without_sources("127.0.0.1:0");
  EXPECT_EQ(http_get(server->port(), "/metrics"), "") << "nothing added yet";
  server->add_source([] { return std::string("# TYPE a_total counter\na_total 1\n"); });
  server->add_source([] { return std::string("# TYPE b gauge\nb 2\n"); });
  EXPECT_EQ(http_get(server->port(), "/metrics"), "# TYPE a_total counter\na_total 1\n# TYPE b gauge\nb 2\n")
      << "sources in the order added";
}

}  // namespace
}  // namespace cudascope::testing
