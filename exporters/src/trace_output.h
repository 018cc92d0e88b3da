#pragma once
// The bytes of a trace file being streamed: plain, or gzip when asked, written with POSIX
// calls on one descriptor so that every failure is seen (no stdio buffer swallowing a
// failed flush) and a failure can be undone.
//
// A checkpoint (flush) is a place where the file ends in whole events: what was written up
// to there is on its way to disk, and the file position, and for gzip the deflate state,
// are remembered. A plain file also gets one at the last whole event of a failed write. When a write fails (a full disk, a file-size limit), close_at_checkpoint()
// cuts the file back to the last checkpoint and ends it there with the given closing text,
// so what was written stays a valid, closed trace; if even that does not fit, it cuts back
// to earlier checkpoints, and at worst leaves the file ending at one (a cut-short trace the
// readers accept). After each checkpoint a little space is reserved past the end of the file
// (fallocate with FALLOC_FL_KEEP_SIZE, where the filesystem has it) for that closing text.
//
// Thread-safety: none; one writer.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

namespace cudascope::exporters::detail {

class TraceOutput {
 public:
  // Creates or truncates `path` (gzip when it ends in ".gz"). Throws std::runtime_error
  // naming the path and the system error.
  static std::unique_ptr<TraceOutput> create(const std::string& path);
  // Takes `fd`, a new empty file opened for writing, shown as `path` in messages.
  TraceOutput(int fd, std::string path, bool gzip);
  ~TraceOutput();  // closes the descriptor; call close() to see errors
  TraceOutput(const TraceOutput&) = delete;
  TraceOutput& operator=(const TraceOutput&) = delete;

  // Throw std::runtime_error naming the path and the system error. write() takes whole
  // events, one per line (a plain file that fails part-way keeps the events written whole).
  void write(std::string_view bytes);
  void checkpoint();
  // Writes `tail`, ends the gzip stream and closes the file.
  void close(std::string_view tail);

  // After a failed write, checkpoint or close: ends the file at the last checkpoint that
  // leaves room for `tail` (see above). Returns false when no closing text could be written
  // (the file then ends at its first checkpoint, cut short). Never throws.
  bool close_at_checkpoint(std::string_view tail) noexcept;

  const std::string& path() const noexcept { return path_; }

 private:
  struct Deflate;  // zlib's stream and a copy of it at the last checkpoint
  void put(const char* data, std::size_t size);  // at offset_, throws
  void add_checkpoint(std::uint64_t offset);     // plain files
  void deflate_out(std::string_view bytes, int flush_mode);
  [[noreturn]] void fail(const char* what, int error) const;

  int fd_ = -1;
  bool regular_ = false;  // a regular file (else a pipe or a device: written in order, never cut)
  std::string path_;
  std::uint64_t offset_ = 0;
  std::deque<std::uint64_t> checkpoints_;  // plain: the last few, newest last
  std::unique_ptr<Deflate> gz_;
};

}  // namespace cudascope::exporters::detail
