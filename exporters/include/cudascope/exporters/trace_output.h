#pragma once
// A trace file being written: plain JSON, or gzip when the path ends in ".gz". flush()
// makes what was written durable (gzip: a sync flush), so a killed process leaves a file
// readable up to its last flush.
//
// Thread-safety: none; one writer.

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace cudascope::exporters {

class TraceOutput {
 public:
  // Throws std::runtime_error naming the path and the system error when it cannot be created.
  explicit TraceOutput(const std::string& path);
  ~TraceOutput();
  TraceOutput(const TraceOutput&) = delete;
  TraceOutput& operator=(const TraceOutput&) = delete;

  void write(std::string_view bytes);
  void flush();
  void close();
  const std::string& path() const noexcept { return path_; }
  bool gzip() const noexcept { return gz_ != nullptr; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
};

}  // namespace cudascope::exporters
