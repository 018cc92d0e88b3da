#include "progress_channel.h"

#include <cudascope/util/env_value.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <ctime>
#include <new>
#include <string>

namespace cudascope::inject {
namespace {

// A full FIFO: run's reader polls every 200 ms at most, so a few milliseconds of waiting
// clear it unless run is stopped; past that the line is dropped rather than the program held.
constexpr int kFullRetries = 20;
constexpr long kFullWaitNs = 1'000'000;

// write(2) with SIGPIPE held back on this thread: a reader that is gone gives EPIPE, and the
// SIGPIPE the write raised is taken off the thread's pending set (unless one was pending
// before, which is the program's to receive). sigpending() also shows a SIGPIPE pending for
// the whole process; then the one this write raised stays pending too, and is delivered as
// the program's own would be.
ssize_t write_without_sigpipe(int fd, std::string_view data) noexcept {
  sigset_t pipe_only, previous, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &previous);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t written = write(fd, data.data(), data.size());
  const int error = errno;
  if (written < 0 && error == EPIPE && !was_pending) {
    const timespec zero{};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = error;
  return written;
}

}  // namespace

int open_progress_channel() noexcept {
  std::string path;
  try {
    path = util::env_text("CUDASCOPE_PROGRESS").value_or("");
  } catch (const std::bad_alloc&) {
    return -1;
  }
  if (path.empty()) return -1;
  // O_NONBLOCK: open fails at once (ENXIO) where no reader holds the FIFO, and so do writes
  // to a full one (EAGAIN) instead of waiting on run.
  const int fd = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  // Run's, and so this user's: a FIFO someone else made under a name run used and removed
  // (a shared /tmp) gets no pids and paths.
  struct stat status {};
  if (fstat(fd, &status) != 0 || !S_ISFIFO(status.st_mode) || status.st_uid != geteuid()) {
    close(fd);
    return -1;
  }
  return fd;
}

bool write_progress_line(int fd, std::string_view line) noexcept {
  // Longer than PIPE_BUF, a write may go in part and its rest join another process's line.
  if (fd < 0 || line.size() > PIPE_BUF) return false;
  for (int attempt = 0;; ++attempt) {
    const ssize_t written = write_without_sigpipe(fd, line);
    if (written == static_cast<ssize_t>(line.size())) return true;
    if (written >= 0 || (errno != EAGAIN && errno != EINTR) || attempt == kFullRetries) return false;
    if (errno == EAGAIN) {
      const timespec wait{0, kFullWaitNs};
      nanosleep(&wait, nullptr);
    }
  }
}

}  // namespace cudascope::inject
