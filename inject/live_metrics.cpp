#include "live_metrics.h"

#if CUDASCOPE_INJECT_METRICS
#include <cudascope/metrics/metrics.h>
#include <cudascope/metrics/profile_metrics.h>

#include "trace_window.h"
#endif

#include <cudascope/util/env_value.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

namespace cudascope::inject {
namespace {

// Seconds in [min, max] from `name`, checked as util::env_seconds does.
std::optional<double> env_seconds_from(const char* name, double min, double max) {
  const auto text = util::env_text(name);
  if (!text) return std::nullopt;
  const double value = util::parse_env_seconds(name, *text, max);
  if (value < min) {
    throw util::EnvError(util::env_shown(name, *text) + " is not a number of seconds from " + std::to_string(min) +
                         " to " + std::to_string(max));
  }
  return value;
}

profiler::SamplingPlan sampling_plan_from_environment() {
  profiler::SamplingPlan plan;
  const double window = env_seconds_from("CUDASCOPE_METRICS_SAMPLE_WINDOW", 0.001, 60).value_or(0.05);
  const double period = env_seconds_from("CUDASCOPE_METRICS_SAMPLE_PERIOD", 0.01, 3600).value_or(1.0);
  if (window > period) {
    throw util::EnvError("CUDASCOPE_METRICS_SAMPLE_WINDOW (" + std::to_string(window) +
                         " s) is longer than CUDASCOPE_METRICS_SAMPLE_PERIOD (" + std::to_string(period) + " s)");
  }
  plan.window = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(window));
  plan.period = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(period));
  return plan;
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

// The windows of a metrics-only recording, when the job was given a token and a directory
// (`cudascope run --no-trace` gives both); else none, and the reason on stderr.
std::shared_ptr<TraceWindows> trace_windows() {
  const std::string token = util::env_text("CUDASCOPE_TRACE_TOKEN").value_or("");
  const std::string directory = util::env_text("CUDASCOPE_TRACE_WINDOW_DIR").value_or("");
  if (token.size() < 16 || directory.empty() || directory.front() != '/') {
    std::fprintf(stderr, "cudascope: no trace windows in this process: they need CUDASCOPE_TRACE_TOKEN (16 characters "
                         "or more) and an absolute CUDASCOPE_TRACE_WINDOW_DIR, as `cudascope run --no-trace` sets\n");
    return nullptr;
  }
  // Opened now: the directory is fixed when the job starts, whatever its path names later.
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "cudascope: no trace windows: cannot open the directory %s: %s\n",
                 util::env_shown("CUDASCOPE_TRACE_WINDOW_DIR", directory).c_str(), std::strerror(errno));
    return nullptr;
  }
  return std::make_shared<TraceWindows>(fd, directory);
}

std::unique_ptr<profiler::TraceSink> with_metrics(std::unique_ptr<profiler::TraceSink> trace, const char* bind,
                                                  profiler::SessionOptions& options) {
  metrics::ProfileMetricsOptions metric_options;
  try {
    if (const auto top = util::env_count("CUDASCOPE_METRICS_TOP", 0, 1000)) metric_options.top_names = *top;
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; using %zu\n", e.what(), metric_options.top_names);
  }
  try {
    metric_options.label_nvtx = util::env_flag("CUDASCOPE_METRICS_LABEL_NVTX").value_or(false);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; kernels are not labelled with NVTX ranges\n", e.what());
  }
  metric_options.labels = metrics::ProcessLabels::from_environment();
  const profiler::ActivitySet& activities = options.activities;
  metric_options.host_waits_from_calls =
      !activities.contains(profiler::Activity::kSync) &&
      (activities.contains(profiler::Activity::kLaunch) || activities.contains(profiler::Activity::kRuntime));
  // Metrics only, with CUDASCOPE_METRICS_SAMPLING=1: kernel records in sampled windows,
  // exported as estimates. Otherwise, and always with a trace, every kernel is recorded and
  // counted exactly.
  const std::shared_ptr<profiler::KernelSampling> sampling = trace ? nullptr : kernel_sampling_from_environment();
  metric_options.kernel_sampling = sampling;
  auto live = std::make_shared<metrics::ProfileMetrics>(metric_options);
  try {
    metrics::MetricsServer& server = metrics::process_server(bind);
    server.add_source([live] { return live->render(); });
    std::fprintf(stderr, "cudascope: serving live metrics at http://%s/metrics (port %d)\n", server.address().c_str(),
                 server.port());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS=%s: not serving metrics in this process: %s\n", bind, e.what());
    return trace;
  }
  if (!trace) {
    // Metrics only: trace windows on request (trace_window.h) take the records' other path.
    if (auto windows = trace_windows()) {
      windows->set_kernel_sampling(sampling);
      serve_trace_windows(windows, bind, util::env_text("CUDASCOPE_TRACE_TOKEN").value_or(""));
      trace = std::make_unique<SharedSink>(windows);
    }
  }
  options.kernel_sampling = sampling;
  options.on_flush = [live, previous = options.on_flush](const profiler::SessionStats& stats) {
    live->set_session_stats(stats);
    if (previous) previous(stats);
  };
  return metrics::ProfileMetrics::tee(std::move(live), std::move(trace));
}
#endif

}  // namespace

std::shared_ptr<profiler::KernelSampling> kernel_sampling_from_environment() {
  bool sampling = false;
  try {
    sampling = util::env_flag("CUDASCOPE_METRICS_SAMPLING").value_or(false);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; every kernel is recorded\n", e.what());
  }
  if (!sampling) {
    for (const char* name :
         {"CUDASCOPE_METRICS_SAMPLE_WINDOW", "CUDASCOPE_METRICS_SAMPLE_PERIOD", "CUDASCOPE_METRICS_SAMPLE_LOG"}) {
      if (util::env_text(name)) {
        std::fprintf(stderr, "cudascope: %s ignored: kernel records are sampled only with CUDASCOPE_METRICS_SAMPLING=1\n", name);
      }
    }
    return nullptr;
  }
  // Opt-in only: CUPTI's own thread has crashed programs whose kinds were switched at run
  // time (docs/metrics.md, "Sampled kernel records").
  std::fprintf(stderr, "cudascope: kernel records sampled (CUDASCOPE_METRICS_SAMPLING=1); switching them has crashed "
                       "CUPTI 13.0's worker thread now and then (docs/metrics.md)\n");
  profiler::SamplingPlan plan;
  try {
    plan = sampling_plan_from_environment();
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; sampling kernel records 50 ms in every 1 s\n", e.what());
  }
  plan.switch_log = util::env_text("CUDASCOPE_METRICS_SAMPLE_LOG").value_or("");
  try {
    plan.count_launches = util::env_flag("CUDASCOPE_METRICS_COUNT_LAUNCHES").value_or(false);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; launches are not counted\n", e.what());
  }
  return std::make_shared<profiler::KernelSampling>(plan);
}

std::unique_ptr<profiler::TraceSink> open_recording_sinks(std::unique_ptr<profiler::TraceSink> trace,
                                                          profiler::SessionOptions& options) {
  const std::string bind = util::env_text("CUDASCOPE_METRICS").value_or("");
#if CUDASCOPE_INJECT_METRICS
  if (!bind.empty()) trace = with_metrics(std::move(trace), bind.c_str(), options);
#else
  (void)options;
  if (!bind.empty()) std::fprintf(stderr, "cudascope: CUDASCOPE_METRICS ignored: built without the Prometheus exporter\n");
#endif
  if (!trace) trace = std::make_unique<NullSink>();  // neither trace nor metrics: records go nowhere
  return trace;
}

}  // namespace cudascope::inject
