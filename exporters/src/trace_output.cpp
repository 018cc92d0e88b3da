#include "trace_output.h"

#include <zlib.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cudascope::exporters::detail {
namespace {
constexpr std::size_t kKeptCheckpoints = 8;
constexpr off_t kReserveBytes = 4096;  // room kept past each checkpoint for the closing text

bool cut_to(int fd, std::uint64_t size) noexcept { return ftruncate(fd, static_cast<off_t>(size)) == 0; }
}  // namespace

struct TraceOutput::Deflate {
  z_stream stream{};
  z_stream saved{};
  bool has_saved = false;
  std::uint64_t saved_offset = 0;
  ~Deflate() {
    deflateEnd(&stream);
    if (has_saved) deflateEnd(&saved);
  }
};

std::unique_ptr<TraceOutput> TraceOutput::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
  return std::make_unique<TraceOutput>(fd, path, path.ends_with(".gz"));
}

TraceOutput::TraceOutput(int fd, std::string path, bool gzip) : fd_(fd), path_(std::move(path)) {
  struct stat status {};
  regular_ = fstat(fd_, &status) == 0 && S_ISREG(status.st_mode);
  if (!gzip) return;
  gz_ = std::make_unique<Deflate>();
  // Level 1, so a writer thread keeps up with a launch-bound program; 15 + 16: a gzip wrapper.
  if (deflateInit2(&gz_->stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    gz_.reset();
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("cannot start gzip compression for '" + path_ + "'");
  }
}

TraceOutput::~TraceOutput() {
  if (fd_ >= 0) ::close(fd_);
}

void TraceOutput::fail(const char* what, int error) const {
  throw std::runtime_error(std::string("cannot ") + what + " '" + path_ + "': " + std::strerror(error));
}

// A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action ends the process: the
// program being recorded must not die of our file, so the signal is blocked on this thread
// while we write and, when a write failed with EFBIG, taken off it.
namespace {
class XfszBlocked {
 public:
  XfszBlocked() noexcept {
    sigemptyset(&xfsz_);
    sigaddset(&xfsz_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz_, &previous_);
  }
  ~XfszBlocked() {
    if (raised_ && !sigismember(&previous_, SIGXFSZ)) {
      const timespec now{0, 0};
      sigtimedwait(&xfsz_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  XfszBlocked(const XfszBlocked&) = delete;
  XfszBlocked& operator=(const XfszBlocked&) = delete;
  void* operator new(std::size_t) = delete;
  void failed_with(int error) noexcept { raised_ = raised_ || error == EFBIG; }

 private:
  sigset_t xfsz_{}, previous_{};
  bool raised_ = false;
};
}  // namespace

void TraceOutput::put(const char* data, std::size_t size) {
  int error = 0;
  {
    XfszBlocked blocked;
    while (size > 0) {
      const ssize_t n = regular_ ? ::pwrite(fd_, data, size, static_cast<off_t>(offset_)) : ::write(fd_, data, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = n < 0 ? errno : ENOSPC;
        break;
      }
      data += n;
      size -= static_cast<std::size_t>(n);
      offset_ += static_cast<std::uint64_t>(n);
    }
    blocked.failed_with(error);
  }
  if (error != 0) fail("write", error);
}

void TraceOutput::deflate_out(std::string_view bytes, int flush_mode) {
  z_stream& s = gz_->stream;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  char out[1 << 16];
  for (;;) {
    s.next_out = reinterpret_cast<Bytef*>(out);
    s.avail_out = sizeof out;
    const int rc = deflate(&s, flush_mode);
    if (rc == Z_STREAM_ERROR) throw std::runtime_error("gzip compression failed for '" + path_ + "'");
    put(out, sizeof out - s.avail_out);
    if (s.avail_in == 0 && s.avail_out != 0) break;  // all taken in, nothing more pending
  }
}

void TraceOutput::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (!gz_) {
    const std::uint64_t start = offset_;
    try {
      put(bytes.data(), bytes.size());
    } catch (const std::exception&) {
      // Keep the events written whole before the failure: a literal newline only ever starts
      // an event's line (JSON strings escape theirs), after the ',' that ends the one before.
      // Two places: a reserve's length back (room for the closing text when nothing is
      // freed), then the last whole event.
      const auto event_end = [&](std::size_t before) -> std::uint64_t {
        const std::size_t line = bytes.substr(0, before).rfind('\n');
        if (line == std::string_view::npos || line == 0) return 0;
        return start + line - (bytes[line - 1] == ',' ? 1 : 0);
      };
      const std::size_t written = offset_ - start;
      if (written > static_cast<std::size_t>(kReserveBytes)) add_checkpoint(event_end(written - kReserveBytes));
      add_checkpoint(event_end(written));
      throw;
    }
    return;
  }
  // zlib takes at most 4 GiB at a time.
  while (!bytes.empty()) {
    const std::size_t chunk = std::min<std::size_t>(bytes.size(), 1u << 30);
    deflate_out(bytes.substr(0, chunk), Z_NO_FLUSH);
    bytes.remove_prefix(chunk);
  }
}

void TraceOutput::checkpoint() {
  if (gz_) {
    deflate_out({}, Z_SYNC_FLUSH);
    if (gz_->has_saved) deflateEnd(&gz_->saved);
    gz_->has_saved = deflateCopy(&gz_->saved, &gz_->stream) == Z_OK;
    gz_->saved_offset = offset_;
  } else {
    add_checkpoint(offset_);
  }
  if (!regular_) return;
  // Best effort: a filesystem without it, or one already full, simply has no reserve.
  XfszBlocked blocked;
  if (fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset_), kReserveBytes) != 0) blocked.failed_with(errno);
}

void TraceOutput::add_checkpoint(std::uint64_t offset) {
  if (offset == 0 || (!checkpoints_.empty() && checkpoints_.back() >= offset)) return;
  checkpoints_.push_back(offset);
  if (checkpoints_.size() > kKeptCheckpoints) checkpoints_.pop_front();
}

void TraceOutput::close(std::string_view tail) {
  if (gz_) {
    deflate_out(tail, Z_FINISH);
  } else {
    put(tail.data(), tail.size());
  }
  // Reserved space past the end goes back with the cut.
  if (regular_ && !cut_to(fd_, offset_)) fail("finish writing", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("finish writing", errno);
}

bool TraceOutput::close_at_checkpoint(std::string_view tail) noexcept {
  if (fd_ < 0) return false;
  bool closed = false;
  if (!regular_) {  // a pipe or a device: nothing can be taken back
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  if (gz_) {
    if (gz_->has_saved && cut_to(fd_, gz_->saved_offset)) {
      offset_ = gz_->saved_offset;
      deflateEnd(&gz_->stream);
      if (deflateCopy(&gz_->stream, &gz_->saved) == Z_OK) {
        try {
          deflate_out(tail, Z_FINISH);
          closed = true;
        } catch (const std::exception&) {
          cut_to(fd_, gz_->saved_offset);
        }
      } else {
        gz_->stream = z_stream{};  // nothing to end
        deflateInit2(&gz_->stream, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
      }
    }
  } else {
    // Newest first: each earlier checkpoint frees more room.
    for (auto it = checkpoints_.rbegin(); it != checkpoints_.rend() && !closed; ++it) {
      if (!cut_to(fd_, *it)) break;
      offset_ = *it;
      try {
        put(tail.data(), tail.size());
        closed = true;
      } catch (const std::exception&) {
        cut_to(fd_, *it);
      }
    }
  }
  const bool no_checkpoint = gz_ ? !gz_->has_saved : checkpoints_.empty();
  if (closed) cut_to(fd_, offset_);  // the reserve past the end goes back
  else if (no_checkpoint) cut_to(fd_, 0);
  ::close(fd_);
  fd_ = -1;
  return closed;
}

}  // namespace cudascope::exporters::detail
