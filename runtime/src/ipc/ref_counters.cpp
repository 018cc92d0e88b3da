#include "ref_counters.h"

#include "../check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace cudascope::cuda::detail::ipc {
namespace {

constexpr std::size_t kFileBytes = kSlots * sizeof(std::int64_t);

// Counters are shared with other processes: every access is atomic (torch's plain
// increments could lose a decrement when two consumers release at once).
std::atomic_ref<std::int64_t> counter_at(std::int64_t* counter) noexcept { return std::atomic_ref<std::int64_t>(*counter); }

}  // namespace

struct RefCounters::File {
  std::string name;
  std::int64_t* slots = nullptr;
  std::uint64_t next_offset = 0;
  std::uint64_t used = 0;

  explicit File(std::string file_name) : name(std::move(file_name)) {
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    CUDASCOPE_CHECK(fd >= 0, error_code::kMemoryAllocation, "shm_open",
                    "IPC reference counters '" + name + "': " + std::strerror(errno));
    void* memory = MAP_FAILED;
    if (ftruncate(fd, kFileBytes) == 0) memory = mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int saved = errno;
    close(fd);
    if (memory == MAP_FAILED) {
      shm_unlink(name.c_str());
      throw_error(error_code::kMemoryAllocation, "mmap", __FILE__, __LINE__,
                  "IPC reference counters '" + name + "': " + std::strerror(saved));
    }
    slots = static_cast<std::int64_t*>(memory);
  }
  ~File() {
    munmap(slots, kFileBytes);
    shm_unlink(name.c_str());
  }
  bool has_free_offsets() const noexcept { return next_offset < kSlots; }
};

RefCounters::RefCounters() = default;
RefCounters::~RefCounters() = default;

CounterSlot RefCounters::take() {
  std::lock_guard lock(mutex_);
  if (current_ == nullptr) {
    // As torch: /<prefix>_<pid>_<random>, so files of a process's successive runs never clash.
    static std::random_device random;
    std::string name = "/cudascope_ipc_" + std::to_string(getpid()) + "_" + std::to_string(random());
    auto file = std::make_unique<File>(name);
    current_ = file.get();
    files_.emplace(std::move(name), std::move(file));
  }
  CounterSlot slot{current_->name, current_->next_offset, current_->slots + current_->next_offset};
  counter_at(slot.counter).store(1);
  ++current_->next_offset;
  ++current_->used;
  if (!current_->has_free_offsets()) current_ = nullptr;  // full: the next share opens a new file
  return slot;
}

void RefCounters::give_back(const CounterSlot& slot) {
  std::lock_guard lock(mutex_);
  const auto found = files_.find(slot.file);
  if (found == files_.end()) return;
  File& file = *found->second;
  --file.used;
  if (file.used == 0 && !file.has_free_offsets()) files_.erase(found);
}

void RefCounters::drop_idle_current_file() {
  std::lock_guard lock(mutex_);
  if (current_ == nullptr || current_->used != 0) return;
  files_.erase(current_->name);
  current_ = nullptr;
}

void RefCounters::unlink_all() noexcept {
  std::lock_guard lock(mutex_);
  for (const auto& [name, file] : files_) shm_unlink(name.c_str());
}

std::size_t RefCounters::slots_in_use() const {
  std::lock_guard lock(mutex_);
  std::size_t used = 0;
  for (const auto& [name, file] : files_) used += file->used;
  return used;
}

std::size_t RefCounters::files() const {
  std::lock_guard lock(mutex_);
  return files_.size();
}

std::int64_t read_counter(const CounterSlot& slot) noexcept { return counter_at(slot.counter).load(); }

bool decrement_counter(const std::string& file, std::uint64_t offset) noexcept {
  if (offset >= kSlots) return false;
  const int fd = shm_open(file.c_str(), O_RDWR, 0600);
  if (fd < 0) return false;
  void* memory = mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (memory == MAP_FAILED) return false;
  counter_at(static_cast<std::int64_t*>(memory) + offset).fetch_sub(1);
  munmap(memory, kFileBytes);
  return true;
}

}  // namespace cudascope::cuda::detail::ipc
