#pragma once
// Devices: torch.cuda's device functions. All are thread-safe. The first call of any of
// them but is_available, device_count and is_initialized initialises the runtime lazily;
// those three answer without creating a context, so a process may still fork after asking.
//
// The current device is the backend's (cudaGetDevice), asked on every use, never cached:
// a raw cudaSetDevice in other code, or a library's own device guard, is seen at once.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::cuda {

struct DeviceProperties {
  std::string name;
  int major = 0;
  int minor = 0;
  std::size_t total_memory = 0;
  int multi_processor_count = 0;
  std::array<std::uint8_t, 16> uuid{};
  int l2_cache_size = 0;
  int max_threads_per_multi_processor = 0;
  int warp_size = 32;
  int regs_per_multiprocessor = 0;
  std::size_t shared_memory_per_block = 0;
  std::size_t shared_memory_per_multiprocessor = 0;
  int clock_rate_khz = 0;
  int memory_clock_rate_khz = 0;
  int memory_bus_width = 0;
  int pci_bus_id = 0;
  int pci_device_id = 0;
  int pci_domain_id = 0;
  bool is_integrated = false;
  bool is_multi_gpu_board = false;

  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
  std::string uuid_string() const;
};

// Which backend serves this process: "cuda" or "sim" (CUDASCOPE_BACKEND=cuda|sim|auto;
// default cuda). An unknown name throws, listing the valid ones.
std::string backend_name();

// True when the backend has a device. Counts with NVML on cuda (CUDA_VISIBLE_DEVICES applied
// as torch applies it), falling back to cudaGetDeviceCount, which initialises the driver.
bool is_available();
// True once the runtime is initialised in this process (false in a child forked after).
bool is_initialized();
// Initialises the backend now. In a child forked after initialisation this and every other
// entry point throw, as torch does ("Cannot re-initialize CUDA in forked subprocess").
void init();
// The devices this process may use; as is_available, without initialising the runtime.
int device_count();
// The calling thread's current device, as the backend holds it.
int current_device();
// Makes `device` current on the calling thread (negative: no-op); throws for an index out of
// range.
void set_device(int device);
void synchronize(int device = -1);

std::string get_device_name(int device = -1);
std::pair<int, int> get_device_capability(int device = -1);
DeviceProperties get_device_properties(int device = -1);
// What this build was compiled for: {"sm_80", "sm_90"}; empty without the cuda backend.
std::vector<std::string> get_arch_list();
// "-gencode compute=compute_80,code=sm_80 ..." for the archs above.
std::string get_gencode_flags();
bool can_device_access_peer(int device, int peer_device);
// Free and total bytes of the device, from the driver (or the sim device's capacity).
std::pair<std::size_t, std::size_t> mem_get_info(int device = -1);

// 0 / "default": nothing; 1 / "warn": one warning on stderr per synchronizing call the
// runtime makes; 2 / "error": such a call throws cuda::Error.
int get_sync_debug_mode();
void set_sync_debug_mode(int mode);
void set_sync_debug_mode(const std::string& mode);

// Sets the current device for its scope and restores the previous one, also on an
// exception. A negative index is a no-op, as torch.cuda.device(None) / device(-1).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) noexcept;
  ~DeviceGuard() noexcept;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  DeviceGuard(DeviceGuard&&) = delete;
  DeviceGuard& operator=(DeviceGuard&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

  int original_device() const noexcept { return original_; }

 private:
  int original_ = -1;
};

}  // namespace cudascope::cuda
