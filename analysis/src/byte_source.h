#pragma once
// Where loader bytes come from: a file, a memory buffer, or either one gunzipped on the fly.
// ByteReader puts a refilling window on top so the parsers stream in bounded memory.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::analysis::detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into out; 0 at the end of the data or on failure (then error() is set).
  virtual size_t read(char* out, size_t n) = 0;
  // Empty while the source is healthy; otherwise what went wrong.
  virtual const std::string& error() const { return error_; }
  // Fraction of the underlying input consumed so far, for progress bars.
  virtual double progress() const = 0;

 protected:
  std::string error_;
};

// A file opened for reading; error() names the system error.
std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error);
std::unique_ptr<ByteSource> memory_source(std::string_view bytes);
// Decompresses gzip (or zlib) data read from `compressed`.
std::unique_ptr<ByteSource> inflate_source(std::unique_ptr<ByteSource> compressed);

// A sliding window over a ByteSource. offset() is the stream position of data()[0].
class ByteReader {
 public:
  explicit ByteReader(ByteSource& source);

  // Makes at least n bytes available at data(); false when the input ends first.
  bool ensure(size_t n) {
    if (static_cast<size_t>(end_ - pos_) >= n) return true;
    return refill(n);
  }
  const char* data() const { return pos_; }
  size_t available() const { return static_cast<size_t>(end_ - pos_); }
  void consume(size_t n) { pos_ += n; }
  uint64_t offset() const { return base_ + static_cast<uint64_t>(pos_ - buffer_.data()); }
  ByteSource& source() { return source_; }

 private:
  bool refill(size_t n);

  ByteSource& source_;
  std::vector<char> buffer_;
  const char* pos_ = nullptr;
  const char* end_ = nullptr;
  uint64_t base_ = 0;  // stream offset of buffer_[0]
  bool at_end_ = false;
};

}  // namespace cudascope::analysis::detail
