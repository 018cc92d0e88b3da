#include "trace_window.h"

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/metrics/metrics.h>
#include <cudascope/util/env_value.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace cudascope::inject {

TraceWindows::TraceWindows(int directory_fd, std::string directory)
    : directory_fd_(directory_fd), directory_(std::move(directory)) {}

TraceWindows::~TraceWindows() {
  if (directory_fd_ >= 0) ::close(directory_fd_);
}

std::string TraceWindows::open(std::chrono::duration<double> duration, bool gzip, std::string& path) {
  std::lock_guard lock(mutex_);
  if (ended_) return "the recording has ended";
  if (window_) return "a window is already being written to " + path_;
  // A name the program chooses; one taken (by anything: a file, a link) is skipped, never replaced.
  for (int attempt = 0; attempt < 1000 && !window_; ++attempt) {
    const std::string name = "cudascope-window-" + std::to_string(getpid()) + "-" + std::to_string(next_number_++) +
                             (gzip ? ".json.gz" : ".json");
    path = directory_ + "/" + name;
    try {
      window_ = exporters::create_chrome_trace_in(directory_fd_, name, path);
    } catch (const std::system_error& e) {
      if (e.code().value() != EEXIST) return e.what();
    }
  }
  if (!window_) return "no free window name in " + directory_;
  window_start_ns_ = cuda::instrumentation::host_time_ns();
  header_pending_ = true;
  if (begun_) {
    try {
      write_header_locked();
    } catch (const std::exception& e) {
      window_.reset();
      return e.what();
    }
  }
  path_ = path;
  last_failure_.clear();
  until_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration);
  records_ = 0;
  if (sampling_ && !holding_full_) {
    sampling_->request_full(true);
    holding_full_ = true;
  }
  return {};
}

void TraceWindows::release_full_locked() {
  if (!holding_full_) return;
  holding_full_ = false;
  sampling_->request_full(false);
}

std::string TraceWindows::status() {
  std::lock_guard lock(mutex_);
  std::string out = (window_ ? "recording " + path_ : std::string("idle")) + "\nwindows " + std::to_string(windows_written_) + "\n";
  if (!last_path_.empty()) out += "last " + last_path_ + "\n";
  if (!last_failure_.empty()) out += "failed " + last_failure_ + "\n";
  return out;
}

void TraceWindows::begin(const profiler::TraceInfo& info) {
  std::lock_guard lock(mutex_);
  info_ = info;
  begun_ = true;
  if (!window_ || !header_pending_) return;
  try {
    write_header_locked();
  } catch (const std::exception& e) {
    failed_locked(e);
  }
}

// A window asked for before the session began (the server answers from the program's start,
// the session begins when CUDA does) gets its header, which names the recording's source and
// activities, once the session has them; no record reaches a window before that.
void TraceWindows::write_header_locked() {
  profiler::TraceInfo info = info_;
  info.start_ns = window_start_ns_;
  header_pending_ = false;
  window_->begin(info);
}

// A window that cannot be written on ends (the writer closed it at its last flush); the
// recording and the metrics go on.
void TraceWindows::failed_locked(const std::exception& e) {
  last_failure_ = e.what();
  for (char& c : last_failure_) {
    if (c == '\n') c = ' ';
  }
  last_path_ = path_;
  window_.reset();
  ++windows_written_;
  release_full_locked();
}

void TraceWindows::write(const profiler::Record* records, std::size_t count) {
  std::lock_guard lock(mutex_);
  if (!window_) return;
  try {
    window_->write(records, count);
    records_ += count;
  } catch (const std::exception& e) {
    failed_locked(e);
  }
}

void TraceWindows::flush() {
  std::lock_guard lock(mutex_);
  if (!window_) return;
  try {
    window_->flush();
    if (std::chrono::steady_clock::now() >= until_) close_locked(cuda::instrumentation::host_time_ns());
  } catch (const std::exception& e) {
    failed_locked(e);
  }
}

void TraceWindows::end(const profiler::TraceSummary& summary) {
  std::lock_guard lock(mutex_);
  ended_ = true;
  if (!window_) return;
  try {
    if (header_pending_) write_header_locked();
    close_locked(summary.end_ns);
  } catch (const std::exception& e) {
    failed_locked(e);
  }
}

void TraceWindows::close_locked(std::uint64_t end_ns) {
  profiler::TraceSummary summary;
  summary.records = records_;
  summary.end_ns = end_ns;
  release_full_locked();
  window_->end(summary);
  window_.reset();
  last_path_ = path_;
  ++windows_written_;
}

bool parse_trace_query(const std::string& query, std::map<std::string, std::string>& out, std::string& problem) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const auto decode = [&](const std::string& raw, std::string& text) {
    for (std::size_t i = 0; i < raw.size(); ++i) {
      char c = raw[i];
      if (c == '%') {
        if (i + 2 >= raw.size()) {
          problem = "a '%' escape needs two hex digits";
          return false;
        }
        const int high = hex(raw[i + 1]), low = hex(raw[i + 2]);
        if (high < 0 || low < 0) {
          problem = "a '%' escape needs two hex digits";
          return false;
        }
        c = static_cast<char>(high * 16 + low);
        i += 2;
      } else if (c == '+') {
        c = ' ';
      }
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        problem = "control characters (NUL included) are refused";
        return false;
      }
      text += c;
    }
    return true;
  };
  std::size_t at = 0;
  while (at < query.size()) {
    const std::size_t amp = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, amp - at);
    at = amp + 1;
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    std::string name, value;
    if (!decode(pair.substr(0, eq), name)) return false;
    if (eq != std::string::npos && !decode(pair.substr(eq + 1), value)) return false;
    if (out.count(name) != 0) {
      problem = "'" + name + "' is given twice";
      return false;
    }
    out[name] = value;
  }
  return true;
}

namespace {

// Compares in time independent of where the texts differ.
bool same_token(const std::string& given, const std::string& token) {
  unsigned char difference = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < token.size(); ++i) {
    difference |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
  }
  return difference == 0;
}

using Answer = std::pair<int, std::string>;

}  // namespace

void serve_trace_windows(const std::shared_ptr<TraceWindows>& windows, const std::string& bind, const std::string& token) {
  metrics::process_server(bind).add_handler("/trace", [windows, token](const std::string& query, bool from_loopback) {
    if (!from_loopback) return Answer{403, "trace windows are served to loopback clients only\n"};
    std::map<std::string, std::string> params;
    std::string problem;
    if (!parse_trace_query(query, params, problem)) return Answer{400, "bad query: " + problem + "\n"};
    const auto given = params.find("token");
    if (given == params.end() || !same_token(given->second, token)) {
      return Answer{403, "trace windows need the job's token (`cudascope trace --pid PID` reads it as the job's user)\n"};
    }
    if (params.size() == 1) return Answer{200, windows->status()};
    for (const auto& [name, value] : params) {
      if (name == "output") {
        return Answer{400, "output is not taken: windows are written where the job was told when it started, under "
                           "names it chooses\n"};
      }
      if (name != "token" && name != "duration" && name != "gzip") return Answer{400, "unknown parameter '" + name + "'\n"};
    }
    const auto duration = params.find("duration");
    double seconds = 0;
    try {
      seconds = duration == params.end() ? 0 : util::parse_env_seconds("duration", duration->second, 3600);
    } catch (const util::EnvError&) {
      seconds = 0;
    }
    if (!(seconds > 0)) return Answer{400, "expected /trace?token=TOKEN&duration=SECONDS(0-3600]\n"};
    const auto gzip = params.find("gzip");
    std::string path;
    problem = windows->open(std::chrono::duration<double>(seconds), gzip != params.end() && gzip->second == "1", path);
    if (!problem.empty()) return Answer{409, problem + "\n"};
    return Answer{200, "recording " + path + "\n"};
  });
}

}  // namespace cudascope::inject
