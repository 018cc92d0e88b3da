#include "trace_window.h"

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/metrics/metrics.h>

#include <cstdlib>
#include <map>

namespace cudascope::inject {

std::string TraceWindows::open(const std::string& path, std::chrono::duration<double> duration) {
  std::lock_guard lock(mutex_);
  if (ended_) return "the recording has ended";
  if (window_) return "a window is already being written to " + path_;
  try {
    window_ = exporters::open_chrome_trace(path);
  } catch (const std::exception& e) {
    return std::string("cannot write ") + path + ": " + e.what();
  }
  profiler::TraceInfo info = info_;
  info.start_ns = cuda::instrumentation::host_time_ns();
  window_->begin(info);
  path_ = path;
  until_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration);
  records_ = 0;
  return {};
}

std::string TraceWindows::status() {
  std::lock_guard lock(mutex_);
  return (window_ ? "recording " + path_ : std::string("idle")) + "\nwindows " + std::to_string(windows_written_) + "\n";
}

void TraceWindows::begin(const profiler::TraceInfo& info) {
  std::lock_guard lock(mutex_);
  info_ = info;
}

void TraceWindows::write(const profiler::Record* records, std::size_t count) {
  std::lock_guard lock(mutex_);
  if (!window_) return;
  window_->write(records, count);
  records_ += count;
}

void TraceWindows::flush() {
  std::lock_guard lock(mutex_);
  if (!window_) return;
  window_->flush();
  if (std::chrono::steady_clock::now() >= until_) close_locked(cuda::instrumentation::host_time_ns());
}

void TraceWindows::end(const profiler::TraceSummary& summary) {
  std::lock_guard lock(mutex_);
  ended_ = true;
  if (window_) close_locked(summary.end_ns);
}

void TraceWindows::close_locked(std::uint64_t end_ns) {
  profiler::TraceSummary summary;
  summary.records = records_;
  summary.end_ns = end_ns;
  window_->end(summary);
  window_.reset();
  ++windows_written_;
}

namespace {

// "duration=10&output=%2Ftmp%2Fw.json" -> {duration: 10, output: /tmp/w.json}
std::map<std::string, std::string> parse_query(const std::string& query) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at <= query.size()) {
    const std::size_t amp = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, amp - at);
    const std::size_t eq = pair.find('=');
    std::string value;
    const std::string raw = eq == std::string::npos ? "" : pair.substr(eq + 1);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size()) {
        value += static_cast<char>(std::strtol(raw.substr(i + 1, 2).c_str(), nullptr, 16));
        i += 2;
      } else {
        value += raw[i] == '+' ? ' ' : raw[i];
      }
    }
    if (!pair.empty()) out[pair.substr(0, eq)] = value;
    at = amp + 1;
  }
  return out;
}

}  // namespace

void serve_trace_windows(const std::shared_ptr<TraceWindows>& windows, const std::string& bind) {
  metrics::process_server(bind).add_handler("/trace", [windows](const std::string& query, bool from_loopback) {
    if (!from_loopback) return std::pair<int, std::string>{403, "trace windows are served to loopback clients only\n"};
    const auto params = parse_query(query);
    if (params.empty()) return std::pair<int, std::string>{200, windows->status()};
    const auto output = params.find("output");
    const auto duration = params.find("duration");
    char* end = nullptr;
    const double seconds = duration == params.end() ? -1 : std::strtod(duration->second.c_str(), &end);
    if (output == params.end() || output->second.empty() || output->second.front() != '/' || seconds <= 0 ||
        seconds > 3600 || *end != '\0') {
      return std::pair<int, std::string>{400, "expected /trace?duration=SECONDS(0-3600]&output=/absolute/path.json\n"};
    }
    const std::string problem = windows->open(output->second, std::chrono::duration<double>(seconds));
    if (!problem.empty()) return std::pair<int, std::string>{409, problem + "\n"};
    return std::pair<int, std::string>{200, "recording " + output->second + "\n"};
  });
}

}  // namespace cudascope::inject
