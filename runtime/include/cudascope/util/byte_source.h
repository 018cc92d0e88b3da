#pragma once
// Where input bytes come from: a file, a memory buffer, or either one gunzipped on the fly,
// and a sliding window (ByteReader) on top so parsers stream in bounded memory. Every
// reader of files in cudascope goes through these, so each one has the same budget
// (input_budget.h) and the same gzip checks.
//
// Thread-safety: none; a source and its reader belong to one thread at a time.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::util {

class ByteReader;

// A stream of bytes. read() never throws; failures are reported through error().
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into out; 0 at the end of the data or on failure (then error() is set).
  virtual size_t read(char* out, size_t n) = 0;
  // Empty while the source is healthy; otherwise what went wrong.
  virtual const std::string& error() const { return error_; }
  // Fraction of the underlying input consumed so far, for progress bars.
  virtual double progress() const = 0;
  // True when error() says only that the data stops early: a gzip stream cut before its
  // trailer, as a killed writer leaves it. Corrupt data, a CRC-32 or length that does not
  // match, or bytes after the last member are not "early" (see finish_input()).
  virtual bool ended_early() const { return false; }

 protected:
  std::string error_;
};

// A file opened for reading, or nullptr with `error` naming the system error (a directory
// is refused). Reading a pipe or a device (/dev/zero) works: it just never ends, which is
// why readers keep a budget.
std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error);
// The bytes must outlive the source.
std::unique_ptr<ByteSource> memory_source(std::string_view bytes);
// Decompresses gzip (or zlib) data read from `compressed`; concatenated gzip members are
// read one after the other. Each member's trailer is checked (CRC-32 and length for gzip,
// Adler-32 for zlib): a flipped bit, a truncated stream or trailing garbage is an error,
// never silently accepted. Past `max_output_bytes` of decompressed data (a gzip bomb) the
// source stops with a budget error (budget_exceeded_message()).
std::unique_ptr<ByteSource> inflate_source(std::unique_ptr<ByteSource> compressed,
                                           uint64_t max_output_bytes = UINT64_MAX);
// True when the bytes start with the gzip magic (1f 8b).
bool is_gzip(std::string_view first_bytes);
// open_file_source(), gunzipped when the file starts with the gzip magic, with
// `max_bytes` as the decompression budget. Works on pipes and devices (peeks, no seek).
std::unique_ptr<ByteSource> open_input(const std::string& path, uint64_t max_bytes, std::string& error);

// The one rule every reader applies at the end of its input, so that a damaged file gives
// the same answer whichever reader opens it. Once a reader has parsed its whole document (a
// pickle's STOP, a JSON document's closing brace, replay's last line), it calls
// finish_input(): the rest of the input may hold only bytes from `allowed_trailing` (JSON's
// whitespace, say; nothing for a pickle), and the source must end cleanly, which for gzip
// means each member's CRC-32 and length checked and nothing after the last member, the
// checks `gzip -t` makes. Returns an empty string when so, otherwise what is wrong
// ("gzip data is corrupt near compressed byte N (incorrect data check)", "expected the end
// of the data after byte N, found ..."); the reader refuses the input with that message.
// Readers of files that a killed process may leave cut short (traces) may read such a file
// up to its last complete item when the source only ended_early(), and say so; every
// other integrity failure is an error for every reader.
std::string finish_input(ByteReader& reader, std::string_view allowed_trailing = {});

// An input opened once (open_input(): gunzipped when it starts with the gzip magic) whose
// first bytes can be looked at before one reader takes the whole stream. This is how a
// command tells what a file holds (a trace, a snapshot, a rank summary) and then reads it
// without opening it twice, so a pipe (`<(zcat t.json.gz)`, a named pipe, stdin as
// /dev/stdin) is read as a regular file is. Call order: head() any number of times, then
// take() once.
class PeekedInput {
 public:
  // nullptr with `error` (as open_input() gives it) when `path` cannot be opened.
  static std::unique_ptr<PeekedInput> open(const std::string& path, uint64_t max_bytes, std::string& error);
  const std::string& path() const { return path_; }
  // The first n bytes of the (decompressed) data, fewer when it is shorter or cannot be
  // read (then error() says why); reads no further than that. Valid until the next call.
  std::string_view head(size_t n);
  // The source's error, if reading the head failed.
  const std::string& error() const;
  // The whole stream from its first byte, the head included. Only once: afterwards the
  // PeekedInput holds nothing.
  std::unique_ptr<ByteSource> take();

 private:
  PeekedInput(std::string path, std::unique_ptr<ByteSource> source) : path_(std::move(path)), source_(std::move(source)) {}
  std::string path_;
  std::unique_ptr<ByteSource> source_;
  std::string head_;
  bool at_end_ = false;
};

// Everything `source` yields, at most max_bytes. On failure `error` holds the source's
// error or budget_exceeded_message(max_bytes) and the result is empty.
std::string read_all(ByteSource& source, uint64_t max_bytes, std::string& error);
// A whole file, gunzipped when it starts with the gzip magic, at most max_bytes (after
// decompression). Errors name the path: "<path>: <what went wrong>".
std::string read_file(const std::string& path, uint64_t max_bytes, std::string& error);

// Decompresses a gzip file that another process is still appending to (a trace being
// recorded with periodic Z_SYNC_FLUSH): each feed() takes the compressed bytes added since
// the last call and appends what they decompress to. Running out of input is not an error
// here, since more is coming; corrupt data, a bad trailer or passing `max_output_bytes`
// is (error() says which). Same zlib checks as inflate_source().
class GzipTail {
 public:
  explicit GzipTail(uint64_t max_output_bytes = UINT64_MAX);
  ~GzipTail();
  GzipTail(const GzipTail&) = delete;
  GzipTail& operator=(const GzipTail&) = delete;

  // False (with error()) when the data cannot be decompressed; `out` keeps what came before.
  bool feed(std::string_view compressed, std::string& out);
  // True once a member's checked trailer has been read and no more data followed it yet.
  bool at_member_end() const;
  const std::string& error() const { return error_; }

 private:
  struct Stream;
  std::unique_ptr<Stream> z_;
  uint64_t max_output_;
  uint64_t produced_ = 0;
  uint64_t compressed_ = 0;
  std::string error_;
};

// A sliding window over a ByteSource. offset() is the stream position of data()[0].
// The stream may be longer than memory: the reader keeps only the window, and refuses to
// read past `max_bytes` in all (then ensure() fails and error() says so), so a parser
// fed /dev/zero stops at the budget instead of growing without bound.
class ByteReader {
 public:
  explicit ByteReader(ByteSource& source, uint64_t max_bytes = UINT64_MAX);

  // Makes at least n bytes available at data(); false when the input ends first, fails,
  // or would pass the budget (error() tells these apart from a plain end).
  bool ensure(size_t n) {
    if (static_cast<size_t>(end_ - pos_) >= n) return true;
    return refill(n);
  }
  const char* data() const { return pos_; }
  size_t available() const { return static_cast<size_t>(end_ - pos_); }
  void consume(size_t n) { pos_ += n; }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(pos_ - buffer_.data()); }
  ByteSource& source() { return source_; }
  // Empty at a clean end of data; otherwise the source's error or the budget message.
  const std::string& error() const { return error_.empty() ? source_.error() : error_; }

 private:
  bool refill(size_t n);

  ByteSource& source_;
  uint64_t max_bytes_;
  std::vector<char> buffer_;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
  uint64_t base_ = 0;  // stream offset of buffer_[0]
  bool at_end_ = false;
  std::string error_;
};

}  // namespace cudascope::util
