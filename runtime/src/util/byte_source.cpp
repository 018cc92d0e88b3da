#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>

#if CUDASCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace cudascope::util {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(std::FILE* file, uint64_t size) : file_(file), size_(size) {}
  ~FileSource() override { std::fclose(file_); }
  size_t read(char* out, size_t n) override {
    const size_t got = std::fread(out, 1, n, file_);
    if (got < n && std::ferror(file_)) error_ = std::string("read error: ") + std::strerror(errno);
    consumed_ += got;
    return got;
  }
  double progress() const override { return size_ ? std::min(1.0, double(consumed_) / double(size_)) : 1.0; }

 private:
  std::FILE* file_;
  uint64_t size_;  // 0 for pipes and devices
  uint64_t consumed_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* out, size_t n) override {
    n = std::min(n, bytes_.size() - pos_);
    if (n > 0) std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  double progress() const override { return bytes_.empty() ? 1.0 : double(pos_) / double(bytes_.size()); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// Bytes read ahead of a source (the peeked magic) served before the rest of it.
class PrefixedSource final : public ByteSource {
 public:
  PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {}
  size_t read(char* out, size_t n) override {
    if (pos_ < prefix_.size()) {
      n = std::min(n, prefix_.size() - pos_);
      std::memcpy(out, prefix_.data() + pos_, n);
      pos_ += n;
      return n;
    }
    return rest_->read(out, n);
  }
  const std::string& error() const override { return rest_->error(); }
  double progress() const override { return rest_->progress(); }
  bool ended_early() const override { return rest_->ended_early(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> rest_;
};

#if CUDASCOPE_HAVE_ZLIB
class InflateSource final : public ByteSource {
 public:
  InflateSource(std::unique_ptr<ByteSource> in, uint64_t max_output)
      : in_(std::move(in)), input_(1 << 18), max_output_(max_output) {
    // 15 + 32: accept gzip and zlib headers alike; inflate() checks each trailer itself.
    if (inflateInit2(&z_, 15 + 32) != Z_OK) error_ = "cannot initialise zlib";
  }
  ~InflateSource() override { inflateEnd(&z_); }

  size_t read(char* out, size_t n) override {
    if (!error_.empty() || done_) return 0;
    if (produced_ >= max_output_) return stop(budget_exceeded_message(max_output_) + " (decompressed gzip data)");
    // Never produce past the budget, so a bomb costs at most the budget.
    // (one byte past it proves the data is longer than allowed).
    if (max_output_ - produced_ < n) n = static_cast<size_t>(max_output_ - produced_) + 1;
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt wanted = z_.avail_out;
    while (z_.avail_out > 0) {
      if (z_.avail_in == 0 && !refill_input()) break;
      if (finished_member_) {  // another gzip member follows (concatenated .gz files)
        inflateReset(&z_);
        finished_member_ = false;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        finished_member_ = true;
        ++members_;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        // Nothing decompressed since the last member ended: what follows it is not gzip.
        const bool trailing = members_ > 0 && z_.total_out == 0;
        stop(std::string("gzip data is corrupt near compressed byte ") + std::to_string(compressed_ - z_.avail_in) +
             " (" + (z_.msg ? z_.msg : "zlib error") +
             (trailing ? ": bytes that are not gzip follow the end of the data, trailing garbage" : "") + ")");
        break;
      }
    }
    const size_t got = wanted - z_.avail_out;
    produced_ += got;
    if (produced_ > max_output_) {
      stop(budget_exceeded_message(max_output_) + " (decompressed gzip data)");
      return got - static_cast<size_t>(produced_ - max_output_);
    }
    return got;
  }
  double progress() const override { return in_->progress(); }
  bool ended_early() const override { return ended_early_; }

 private:
  // False at the end of the compressed input, which is an error unless the last member
  // ended with its checked trailer.
  bool refill_input() {
    const size_t got = in_->read(input_.data(), input_.size());
    if (got == 0) {
      if (!in_->error().empty()) stop(in_->error());
      else if (!finished_member_) {
        stop("gzip data ends early after " + std::to_string(compressed_) + " compressed bytes (truncated file?)");
        ended_early_ = true;
      }
      done_ = true;
      return false;
    }
    compressed_ += got;
    z_.next_in = reinterpret_cast<Bytef*>(input_.data());
    z_.avail_in = static_cast<uInt>(got);
    return true;
  }
  size_t stop(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    done_ = true;
    return 0;
  }

  std::unique_ptr<ByteSource> in_;
  std::vector<char> input_;
  uint64_t max_output_;
  uint64_t produced_ = 0;
  z_stream z_{};
  uint64_t compressed_ = 0;
  bool finished_member_ = false;
  bool done_ = false;
  bool ended_early_ = false;
  uint64_t members_ = 0;  // gzip members read to their checked trailer
};
#else
class InflateSource final : public ByteSource {
 public:
  InflateSource(std::unique_ptr<ByteSource>, uint64_t) { error_ = "this build has no zlib, so gzip data cannot be read"; }
  size_t read(char*, size_t) override { return 0; }
  double progress() const override { return 1.0; }
};
#endif

}  // namespace

#if CUDASCOPE_HAVE_ZLIB
struct GzipTail::Stream {
  z_stream z{};
  bool member_end = false;
  bool ok = false;
  Stream() { ok = inflateInit2(&z, 15 + 32) == Z_OK; }
  ~Stream() { inflateEnd(&z); }
};

GzipTail::GzipTail(uint64_t max_output_bytes) : z_(std::make_unique<Stream>()), max_output_(max_output_bytes) {
  if (!z_->ok) error_ = "cannot initialise zlib";
}

GzipTail::~GzipTail() = default;

bool GzipTail::at_member_end() const { return z_->member_end; }

bool GzipTail::feed(std::string_view compressed, std::string& out) {
  if (!error_.empty()) return false;
  z_stream& z = z_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  char chunk[1 << 16];
  for (;;) {
    if (z_->member_end) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      z_->member_end = false;
    }
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t got = sizeof chunk - z.avail_out;
    produced_ += got;
    if (produced_ > max_output_) {
      error_ = budget_exceeded_message(max_output_) + " (decompressed gzip data)";
      return false;
    }
    out.append(chunk, got);
    if (rc == Z_STREAM_END) {
      z_->member_end = true;
      continue;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      error_ = std::string("gzip data is corrupt near compressed byte ") +
               std::to_string(compressed_ + compressed.size() - z.avail_in) + " (" + (z.msg ? z.msg : "zlib error") + ")";
      return false;
    }
    // Done when zlib had room left over (it holds no more output) and no input remains,
    // or when it can make no progress until the writer adds more.
    if (rc == Z_BUF_ERROR || (z.avail_in == 0 && z.avail_out != 0)) break;
  }
  compressed_ += compressed.size();
  return true;
}
#else
struct GzipTail::Stream {};
GzipTail::GzipTail(uint64_t max_output_bytes) : max_output_(max_output_bytes) {
  error_ = "this build has no zlib, so gzip data cannot be read";
}
GzipTail::~GzipTail() = default;
bool GzipTail::at_member_end() const { return false; }
bool GzipTail::feed(std::string_view, std::string&) { return false; }
#endif

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (fstat(fileno(file), &st) != 0 || S_ISDIR(st.st_mode)) {
    error = S_ISDIR(st.st_mode) ? "is a directory, expected a file" : "cannot stat the file";
    std::fclose(file);
    return nullptr;
  }
  return std::make_unique<FileSource>(file, S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0);
}

std::unique_ptr<ByteSource> memory_source(std::string_view bytes) { return std::make_unique<MemorySource>(bytes); }

std::unique_ptr<ByteSource> inflate_source(std::unique_ptr<ByteSource> compressed, uint64_t max_output_bytes) {
  return std::make_unique<InflateSource>(std::move(compressed), max_output_bytes);
}

bool is_gzip(std::string_view first_bytes) {
  return first_bytes.size() >= 2 && static_cast<unsigned char>(first_bytes[0]) == 0x1f &&
         static_cast<unsigned char>(first_bytes[1]) == 0x8b;
}

std::unique_ptr<ByteSource> open_input(const std::string& path, uint64_t max_bytes, std::string& error) {
  auto file = open_file_source(path, error);
  if (!file) return nullptr;
  // Peek through the source itself rather than reopening: pipes can be read only once.
  std::string magic(2, '\0');
  size_t got = 0;
  while (got < magic.size()) {
    const size_t n = file->read(magic.data() + got, magic.size() - got);
    if (n == 0) break;
    got += n;
  }
  magic.resize(got);
  const bool gz = is_gzip(magic);
  std::unique_ptr<ByteSource> source = std::make_unique<PrefixedSource>(std::move(magic), std::move(file));
  if (gz) source = inflate_source(std::move(source), max_bytes);
  return source;
}

std::unique_ptr<PeekedInput> PeekedInput::open(const std::string& path, uint64_t max_bytes, std::string& error) {
  auto source = open_input(path, max_bytes, error);
  if (!source) return nullptr;
  return std::unique_ptr<PeekedInput>(new PeekedInput(path, std::move(source)));
}

std::string_view PeekedInput::head(size_t n) {
  while (head_.size() < n && !at_end_ && source_) {
    const size_t old = head_.size();
    head_.resize(n);
    const size_t got = source_->read(head_.data() + old, n - old);
    head_.resize(old + got);
    if (got == 0) at_end_ = true;
  }
  return std::string_view(head_).substr(0, std::min(n, head_.size()));
}

const std::string& PeekedInput::error() const {
  static const std::string none;
  return source_ ? source_->error() : none;
}

std::unique_ptr<ByteSource> PeekedInput::take() {
  if (!source_) return memory_source({});
  return std::make_unique<PrefixedSource>(std::move(head_), std::move(source_));
}

std::string finish_input(ByteReader& reader, std::string_view allowed_trailing) {
  const uint64_t end = reader.offset();
  while (reader.ensure(1)) {
    const char* p = reader.data();
    const size_t n = reader.available();
    for (size_t i = 0; i < n; ++i) {
      if (allowed_trailing.find(p[i]) != std::string_view::npos) continue;
      static const char* digits = "0123456789abcdef";
      const auto c = static_cast<unsigned char>(p[i]);
      return "expected the end of the data after byte " + std::to_string(end) + ", found byte 0x" + digits[c >> 4] +
             digits[c & 15] + " at byte " + std::to_string(reader.offset() + i) +
             " (trailing data: two files joined, or a damaged one?)";
    }
    reader.consume(n);
  }
  return reader.error();
}

std::string read_all(ByteSource& source, uint64_t max_bytes, std::string& error) {
  std::string out;
  size_t chunk = 1 << 16;
  for (;;) {
    if (out.size() > max_bytes) {
      error = budget_exceeded_message(max_bytes);
      return {};
    }
    const size_t old = out.size();
    out.resize(old + chunk);
    const size_t got = source.read(out.data() + old, chunk);
    out.resize(old + got);
    if (got == 0) break;
    chunk = std::min<size_t>(chunk * 2, 1 << 24);
  }
  if (!source.error().empty()) {
    error = source.error();
    return {};
  }
  if (out.size() > max_bytes) {
    error = budget_exceeded_message(max_bytes);
    return {};
  }
  return out;
}

std::string read_file(const std::string& path, uint64_t max_bytes, std::string& error) {
  auto source = open_input(path, max_bytes, error);
  if (!source) {
    error = path + ": " + error;
    return {};
  }
  std::string out = read_all(*source, max_bytes, error);
  if (!error.empty()) error = path + ": " + error;
  return out;
}

ByteReader::ByteReader(ByteSource& source, uint64_t max_bytes)
    : source_(source), max_bytes_(max_bytes), buffer_(1 << 20) {
  pos_ = end_ = buffer_.data();
}

bool ByteReader::refill(size_t n) {
  if (!error_.empty()) return false;  // a budget error sticks
  // Move the unread tail to the front, grow if one item is larger than the window, then read.
  const size_t keep = available();
  const size_t shift = static_cast<size_t>(pos_ - buffer_.data());
  if (keep > 0 && shift > 0) std::memmove(buffer_.data(), pos_, keep);
  base_ += shift;
  // Bytes the budget still allows from base_; reading one more than that proves the input
  // is longer than allowed, without ever holding more than budget + 1 bytes.
  const uint64_t left = max_bytes_ - base_;
  const size_t want = left < n ? static_cast<size_t>(left) + 1 : n;
  if (want > buffer_.size()) buffer_.resize(std::max(want, std::min<size_t>(buffer_.size() * 2, want + (1 << 20))));
  size_t room = buffer_.size();
  if (left < room) room = static_cast<size_t>(left) + 1;
  size_t filled = keep;
  while (filled < want && !at_end_ && filled < room) {
    const size_t got = source_.read(buffer_.data() + filled, room - filled);
    if (got == 0) at_end_ = true;
    filled += got;
  }
  pos_ = buffer_.data();
  end_ = buffer_.data() + filled;
  if (filled > left) {
    error_ = budget_exceeded_message(max_bytes_);
    end_ = pos_;
    return false;
  }
  return filled >= n;
}

}  // namespace cudascope::util
