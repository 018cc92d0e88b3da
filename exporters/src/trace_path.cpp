#include <cudascope/exporters/trace_path.h>

#include <cudascope/util/env_value.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace cudascope::exporters {

std::string trace_host_name() {
  try {
    if (std::optional<std::string> name = util::env_test_hostname()) return std::move(*name);
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; ignored\n", e.what());
  }
  char host[HOST_NAME_MAX + 1] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

std::string run_id_of_this_process() {
  const char* id = std::getenv("CUDASCOPE_RUN_ID");
  return id != nullptr ? std::string(id) : std::string();
}

std::optional<std::string> trace_file_run_id(const std::string& path) {
  // The header (ChromeTraceWriter::begin) is a few hundred bytes ahead of "traceEvents";
  // gzread reads a plain file as it is.
  constexpr int kHeadBytes = 4096;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return std::nullopt;
  std::string head(kHeadBytes, '\0');
  const int n = gzread(file, head.data(), kHeadBytes);
  gzclose(file);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  const std::size_t events = head.find("\"traceEvents\"");
  if (events == std::string::npos) return std::nullopt;
  const std::string key = "\"run\":\"";
  const std::size_t at = head.rfind(key, events);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t begin = at + key.size();
  const std::size_t end = head.find('"', begin);
  if (end == std::string::npos || end > events) return std::nullopt;
  return head.substr(begin, end - begin);
}

TracePathFields TracePathFields::of_this_process() {
  TracePathFields fields;
  if (const char* rank = std::getenv("RANK"); rank != nullptr && *rank != '\0') fields.rank = rank;
  fields.pid = std::to_string(getpid());
  fields.host = trace_host_name();
  if (fields.host.empty()) fields.host = "localhost";
  return fields;
}

bool is_trace_path_pattern(const std::string& path) {
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    if (path[i] != '%') continue;
    if (path[i + 1] == 'r' || path[i + 1] == 'p' || path[i + 1] == 'h') return true;
    ++i;  // "%%" and unknown directives stand for no field
  }
  return false;
}

std::string trace_path_pattern_problem(const std::string& pattern) {
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    const std::string where = " at character " + std::to_string(i + 1) + " of '" + pattern + "'";
    if (i + 1 == pattern.size()) return "a lone '%'" + where + " (write %% for a literal '%')";
    const char c = pattern[i + 1];
    if (c != 'r' && c != 'p' && c != 'h' && c != '%') {
      return "unknown directive '%" + std::string(1, c) + "'" + where + "; use %r (rank), %p (pid), %h (host) or %%";
    }
    ++i;
  }
  return {};
}

std::string expand_trace_path(const std::string& pattern, const TracePathFields& fields) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (pattern[i + 1]) {
      case 'r': out += fields.rank; break;
      case 'p': out += fields.pid; break;
      case 'h': out += fields.host; break;
      case '%': out += '%'; break;
      default: out += pattern.substr(i, 2); break;
    }
    ++i;
  }
  return out;
}

std::string with_pid_suffix(const std::string& path, const std::string& pid) {
  const std::size_t slash = path.rfind('/');
  std::size_t dot = path.rfind(".json");
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
  return path.substr(0, dot) + "." + pid + path.substr(dot);
}

bool claim_trace_path(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return true;  // not ours to report: the writer names the error when it opens the file
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  return true;  // the descriptor stays open: the lock lasts until this process ends
}

std::string choose_trace_path(const std::string& pattern, const std::string& owner_pid, const TracePathFields& fields) {
  std::string path = expand_trace_path(pattern, fields);
  // A fixed name belongs to the process `cudascope run` started; its workers write beside it.
  if (!is_trace_path_pattern(pattern) && !owner_pid.empty() && owner_pid != fields.pid) path = with_pid_suffix(path, fields.pid);
  if (claim_trace_path(path)) return path;
  // Another live process of the run writes that name (two processes of one rank, a
  // launcher without RANK twice, two runs given one -o): this one writes its own.
  path = with_pid_suffix(path, fields.pid);
  claim_trace_path(path);
  return path;
}

}  // namespace cudascope::exporters
