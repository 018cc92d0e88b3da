#include "byte_source.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace cudascope::analysis::detail {
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
  double progress() const override { return size_ ? double(consumed_) / double(size_) : 1.0; }

 private:
  std::FILE* file_;
  uint64_t size_;
  uint64_t consumed_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* out, size_t n) override {
    n = std::min(n, bytes_.size() - pos_);
    std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  double progress() const override { return bytes_.empty() ? 1.0 : double(pos_) / double(bytes_.size()); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class InflateSource final : public ByteSource {
 public:
  explicit InflateSource(std::unique_ptr<ByteSource> in) : in_(std::move(in)), input_(1 << 18) {
    // 15 + 32: accept gzip and zlib headers alike.
    if (inflateInit2(&z_, 15 + 32) != Z_OK) error_ = "cannot initialise zlib";
  }
  ~InflateSource() override { inflateEnd(&z_); }

  size_t read(char* out, size_t n) override {
    if (!error_.empty() || done_) return 0;
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out > 0) {
      if (z_.avail_in == 0) {
        const size_t got = in_->read(input_.data(), input_.size());
        if (got == 0) {
          if (!in_->error().empty()) error_ = in_->error();
          else if (!finished_member_)
            error_ = "gzip data ends early after " + std::to_string(compressed_) +
                     " compressed bytes (truncated file?)";
          done_ = true;
          break;
        }
        compressed_ += got;
        z_.next_in = reinterpret_cast<Bytef*>(input_.data());
        z_.avail_in = static_cast<uInt>(got);
      }
      if (finished_member_) {  // another gzip member follows (concatenated .gz files)
        inflateReset(&z_);
        finished_member_ = false;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        finished_member_ = true;
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        error_ = std::string("gzip data is corrupt near compressed byte ") +
                 std::to_string(compressed_ - z_.avail_in) + " (" + (z_.msg ? z_.msg : "zlib error") + ")";
        done_ = true;
        break;
      }
    }
    return n - z_.avail_out;
  }
  double progress() const override { return in_->progress(); }

 private:
  std::unique_ptr<ByteSource> in_;
  std::vector<char> input_;
  z_stream z_{};
  uint64_t compressed_ = 0;
  bool finished_member_ = false;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path, std::string& error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (fstat(fileno(file), &st) != 0 || S_ISDIR(st.st_mode)) {
    error = S_ISDIR(st.st_mode) ? "is a directory, expected a snapshot file" : "cannot stat the file";
    std::fclose(file);
    return nullptr;
  }
  return std::make_unique<FileSource>(file, static_cast<uint64_t>(st.st_size));
}

std::unique_ptr<ByteSource> memory_source(std::string_view bytes) { return std::make_unique<MemorySource>(bytes); }

std::unique_ptr<ByteSource> inflate_source(std::unique_ptr<ByteSource> compressed) {
  return std::make_unique<InflateSource>(std::move(compressed));
}

ByteReader::ByteReader(ByteSource& source) : source_(source), buffer_(1 << 20) {
  pos_ = end_ = buffer_.data();
}

bool ByteReader::refill(size_t n) {
  // Move the unread tail to the front, grow if one item is larger than the window, then read.
  const size_t keep = available();
  const size_t shift = static_cast<size_t>(pos_ - buffer_.data());
  if (keep > 0 && shift > 0) std::memmove(buffer_.data(), pos_, keep);
  base_ += shift;
  if (n > buffer_.size()) buffer_.resize(std::max(n, buffer_.size() * 2));
  size_t filled = keep;
  while (filled < n && !at_end_) {
    const size_t got = source_.read(buffer_.data() + filled, buffer_.size() - filled);
    if (got == 0) at_end_ = true;
    filled += got;
  }
  pos_ = buffer_.data();
  end_ = buffer_.data() + filled;
  return filled >= n;
}

}  // namespace cudascope::analysis::detail
