#pragma once
// A file being written: plain, or gzip when the path ends in ".gz". flush() makes what was
// written so far readable by others (gzip: a sync flush, so the stream up to there
// decompresses), so a killed process leaves a file readable up to its last flush. Used for
// traces written while recording and for snapshots written at once.
//
// Thread-safety: none; one writer.

#include <cstdio>
#include <string>
#include <string_view>

namespace cudascope::util {

class OutputFile {
 public:
  // Gzip compression level used for ".gz" paths when none is given: 1, so a writer thread
  // keeps up with a launch-bound program.
  static constexpr int kFastGzip = 1;

  // Throws std::runtime_error naming the path and the system error when it cannot be created.
  explicit OutputFile(const std::string& path, int gzip_level = kFastGzip);
  ~OutputFile();  // close(), swallowing errors: call close() to see them
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Throws std::runtime_error naming the path when the bytes cannot be written.
  void write(std::string_view bytes);
  // Pushes everything written so far to the file (stdio buffer and gzip state).
  void flush();
  // Finishes the file (gzip trailer) and closes it; throws std::runtime_error naming the
  // path when that fails (disk full shows up here). Further calls do nothing.
  void close();
  const std::string& path() const noexcept { return path_; }
  bool gzip() const noexcept { return gz_ != nullptr; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile
};

// Writes `data` as the whole of `path` (gzip when it ends in ".gz", at level 6, as
// PyTorch's tools expect of a compressed snapshot). Throws std::runtime_error naming the path.
void write_file(const std::string& path, std::string_view data);

}  // namespace cudascope::util
