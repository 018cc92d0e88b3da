#include "live_metrics.h"

#if CUDASCOPE_INJECT_METRICS
#include <cudascope/metrics/metrics.h>
#include <cudascope/metrics/profile_metrics.h>

#include "trace_window.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudascope::inject {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

class NullSink final : public profiler::TraceSink {
 public:
  void begin(const profiler::TraceInfo&) override {}
  void write(const profiler::Record*, std::size_t) override {}
  void flush() override {}
  void end(const profiler::TraceSummary&) override {}
};

#if CUDASCOPE_INJECT_METRICS
// Hands a sink shared with the /trace handler to the session, which wants to own its sink.
class SharedSink final : public profiler::TraceSink {
 public:
  explicit SharedSink(std::shared_ptr<profiler::TraceSink> sink) : sink_(std::move(sink)) {}
  void begin(const profiler::TraceInfo& info) override { sink_->begin(info); }
  void write(const profiler::Record* records, std::size_t count) override { sink_->write(records, count); }
  void flush() override { sink_->flush(); }
  void end(const profiler::TraceSummary& summary) override { sink_->end(summary); }

 private:
  std::shared_ptr<profiler::TraceSink> sink_;
};

std::unique_ptr<profiler::TraceSink> with_metrics(std::unique_ptr<profiler::TraceSink> trace, const char* bind,
                                                  profiler::SessionOptions& options) {
  metrics::ProfileMetricsOptions metric_options;
  if (const char* top = env("CUDASCOPE_METRICS_TOP")) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(top, &end, 10);
    if (*end == '\0' && n <= 1000) metric_options.top_names = n;
    else std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS_TOP='%s' is not a count from 0 to 1000; using 20\n", top);
  }
  const char* label = env("CUDASCOPE_METRICS_LABEL_NVTX");
  metric_options.label_nvtx = label != nullptr && std::strcmp(label, "0") != 0;
  metric_options.labels = metrics::ProcessLabels::from_environment();
  auto live = std::make_shared<metrics::ProfileMetrics>(metric_options);
  try {
    metrics::MetricsServer& server = metrics::process_server(bind);
    server.add_source([live] { return live->render(); });
    std::fprintf(stderr, "cudascope: serving live metrics at http://%s/metrics (port %d)\n", bind, server.port());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s: not serving metrics in this process: %s\n", bind, e.what());
    return trace;
  }
  if (!trace) {
    // Metrics only: trace windows on request (trace_window.h) take the records' other path.
    auto windows = std::make_shared<TraceWindows>();
    serve_trace_windows(windows, bind);
    trace = std::make_unique<SharedSink>(windows);
  }
  options.on_flush = [live, previous = options.on_flush](const profiler::SessionStats& stats) {
    live->set_session_stats(stats);
    if (previous) previous(stats);
  };
  return metrics::ProfileMetrics::tee(std::move(live), std::move(trace));
}
#endif

}  // namespace

bool trace_wanted() {
  const char* no_trace = env("CUDASCOPE_NO_TRACE");
  return no_trace == nullptr || std::strcmp(no_trace, "0") == 0;
}

std::unique_ptr<profiler::TraceSink> open_recording_sinks(std::unique_ptr<profiler::TraceSink> trace,
                                                          profiler::SessionOptions& options) {
  const char* bind = env("CUDASCOPE_METRICS");
#if CUDASCOPE_INJECT_METRICS
  if (bind != nullptr) trace = with_metrics(std::move(trace), bind, options);
#else
  (void)options;
  if (bind != nullptr) std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS ignored: built without the Prometheus exporter\n");
#endif
  if (!trace) trace = std::make_unique<NullSink>();  // neither trace nor metrics: records go nowhere
  return trace;
}

}  // namespace cudascope::inject
