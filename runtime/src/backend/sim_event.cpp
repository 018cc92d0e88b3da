#include "sim_event.h"

#include "../check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace cudascope::cuda::detail {
namespace {

constexpr char kHandleMagic[8] = {'c', 's', 'e', 'v', 's', 'i', 'm', '1'};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The state in a shared-memory object; the creator unlinks the name when the last holder
// lets go of the state.
SharedEventState map_shared_state(const std::string& name, bool create) {
  const int fd = shm_open(name.c_str(), create ? (O_CREAT | O_EXCL | O_RDWR) : O_RDWR, 0600);
  CUDASCOPE_CHECK(fd >= 0, error_code::kInvalidResourceHandle, create ? "cudaEventCreate" : "cudaIpcOpenEventHandle",
                  "shared memory '" + name + "': " + std::strerror(errno));
  if (create && ftruncate(fd, sizeof(SimEventState)) != 0) {
    close(fd);
    throw_error(error_code::kMemoryAllocation, "cudaEventCreate", __FILE__, __LINE__, std::strerror(errno));
  }
  void* memory = mmap(nullptr, sizeof(SimEventState), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  CUDASCOPE_CHECK(memory != MAP_FAILED, error_code::kMemoryAllocation, "cudaEventCreate", std::strerror(errno));
  SimEventState* state = create ? new (memory) SimEventState() : static_cast<SimEventState*>(memory);
  return SharedEventState(state, [name, create](SimEventState* mapped) {
    munmap(mapped, sizeof(SimEventState));
    if (create) shm_unlink(name.c_str());
  });
}

}  // namespace

SimEvent::SimEvent(int device, bool enable_timing, bool interprocess) : device_(device), enable_timing_(enable_timing) {
  if (!interprocess) {
    state_ = std::make_shared<SimEventState>();
    return;
  }
  static std::atomic<int> counter{0};
  shm_name_ = "/cudascope-ev-" + std::to_string(getpid()) + "-" + std::to_string(counter.fetch_add(1));
  state_ = map_shared_state(shm_name_, true);
}

SimEvent::SimEvent(int device, const IpcEventHandle& handle) : device_(device), enable_timing_(false) {
  CUDASCOPE_CHECK(std::memcmp(handle.data(), kHandleMagic, sizeof kHandleMagic) == 0,
                  error_code::kInvalidResourceHandle, "cudaIpcOpenEventHandle",
                  "the handle was not made by a sim-backend event");
  const char* name = reinterpret_cast<const char*>(handle.data() + sizeof kHandleMagic);
  shm_name_.assign(name, strnlen(name, handle.size() - sizeof kHandleMagic));
  state_ = map_shared_state(shm_name_, false);
}

SimEvent::~SimEvent() = default;

void SimEventState::complete(std::uint64_t generation) noexcept {
  completed_at_ns.store(now_ns());
  std::uint64_t seen = completed.load();
  while (seen < generation && !completed.compare_exchange_weak(seen, generation)) {
  }
}

void SimEventState::wait_for(std::uint64_t generation) const {
  auto pause = std::chrono::microseconds(1);
  while (!reached(generation)) {
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(200)) pause *= 2;
  }
}

IpcEventHandle SimEvent::ipc_handle() const {
  CUDASCOPE_CHECK(!shm_name_.empty(), error_code::kInvalidResourceHandle, "cudaIpcGetEventHandle",
                  "the event was not created with interprocess=true");
  IpcEventHandle handle{};
  std::memcpy(handle.data(), kHandleMagic, sizeof kHandleMagic);
  std::memcpy(handle.data() + sizeof kHandleMagic, shm_name_.data(),
              std::min(shm_name_.size(), handle.size() - sizeof kHandleMagic - 1));
  return handle;
}

}  // namespace cudascope::cuda::detail
