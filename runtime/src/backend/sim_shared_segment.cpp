#include "sim_shared_segment.h"

#include "../check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>

namespace cudascope::cuda::detail {
namespace {

[[noreturn]] void fail(int code, const char* call, const std::string& what) {
  throw_error(code, call, __FILE__, __LINE__, what + ": " + std::strerror(errno));
}

// Replaces [at, at+size) with fresh anonymous pages of `protection`, as SimMemory reserves them.
void remap_anonymous(void* at, std::size_t size, int protection, const char* call) {
  void* mapped = mmap(at, size, protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (mapped == MAP_FAILED) fail(error_code::kInvalidValue, call, "remapping sim device memory");
}

// The names of segments shared now. The sim backend is never destroyed (work may run during
// exit), so its segments are never freed at exit: their names are removed here instead, as
// the driver releases a process's IPC memory when it exits.
//
// The registry itself is never destroyed either: a stream worker or another thread may still
// share or free a segment while exit runs the static destructors, and a destroyed set would
// be used after its destruction. Only its names go at exit (NamesAtExit); a segment shared
// after that has its name removed at once (no other process can open it any more, the
// mapping here stays).
class LiveNames {
 public:
  void add(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (exited_) {
      shm_unlink(name.c_str());
      return;
    }
    names_.insert(name);
  }
  void remove(const std::string& name) {
    std::lock_guard lock(mutex_);
    names_.erase(name);
  }
  void unlink_all_at_exit() noexcept {
    std::lock_guard lock(mutex_);
    for (const auto& name : names_) shm_unlink(name.c_str());
    names_.clear();
    exited_ = true;
  }

 private:
  std::mutex mutex_;
  std::set<std::string> names_;
  bool exited_ = false;
};

LiveNames& live_names() {
  static auto* names = new LiveNames();  // leaked on purpose: see above
  // Constructed after `names`, so destroyed (at exit) while `names` is still usable.
  static const struct NamesAtExit {
    LiveNames* names;
    ~NamesAtExit() { names->unlink_all_at_exit(); }
  } at_exit{names};
  return *names;
}

}  // namespace

std::string share_in_place(void* ptr, std::size_t size) {
  static std::atomic<unsigned> serial{0};
  const std::string name = "/cudascope-mem-" + std::to_string(getpid()) + "-" + std::to_string(serial.fetch_add(1));
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) fail(error_code::kMemoryAllocation, "cudaIpcGetMemHandle", "shared memory '" + name + "'");
  void* staging = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
    staging = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (staging == MAP_FAILED) {
    const int saved = errno;
    close(fd);
    shm_unlink(name.c_str());
    errno = saved;
    fail(error_code::kMemoryAllocation, "cudaIpcGetMemHandle", "shared memory '" + name + "' of " + std::to_string(size) + " bytes");
  }
  std::memcpy(staging, ptr, size);
  void* in_place = mmap(ptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  const int saved = errno;
  munmap(staging, size);
  close(fd);
  if (in_place == MAP_FAILED) {
    shm_unlink(name.c_str());
    errno = saved;
    fail(error_code::kMemoryAllocation, "cudaIpcGetMemHandle", "mapping shared memory '" + name + "'");
  }
  live_names().add(name);
  return name;
}

void unshare_in_place(void* ptr, std::size_t size, const std::string& name) {
  remap_anonymous(ptr, size, PROT_READ | PROT_WRITE, "cudaFree");
  shm_unlink(name.c_str());
  live_names().remove(name);
}

void map_shared_at(void* at, std::size_t size, const std::string& name) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  CUDASCOPE_CHECK(fd >= 0, error_code::kInvalidResourceHandle, "cudaIpcOpenMemHandle",
                  "shared memory '" + name + "' is gone (the producer freed the segment or exited): " +
                      std::strerror(errno));
  void* mapped = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED) fail(error_code::kInvalidResourceHandle, "cudaIpcOpenMemHandle", "mapping '" + name + "'");
}

void unmap_shared_at(void* at, std::size_t size) { remap_anonymous(at, size, PROT_NONE, "cudaIpcCloseMemHandle"); }

}  // namespace cudascope::cuda::detail
