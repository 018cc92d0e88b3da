// Devices, lazy initialisation, fork detection and the sync-debug mode.
#include <cudascope/cuda/device.h>

#include "arch_list.h"
#include "check.h"
#include "runtime_state.h"
#include "sanitizer/hooks.h"
#include "tool_loader.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <vector>

namespace cudascope::cuda {
namespace detail {
namespace {

std::atomic<bool> initialized{false};
// The driver was initialised outside init() (note_driver_initialized): a fork poisons the
// child as after init(), while is_initialized() stays false, as torch's poison_fork.
std::atomic<bool> driver_initialized{false};
std::atomic<bool> in_bad_fork{false};
std::once_flag init_once;
std::once_flag fork_handler_once;
std::atomic<int> sync_debug_mode{0};
// A DeviceGuard given an index it could not make current (it cannot throw) leaves it here:
// the thread's next call on "the current device" throws naming it; -1 when none. Read by
// every allocator call without a device. Global-dynamic (the shared library's default), not
// initial-exec: the runtime is also loaded with dlopen (by PyTorch through
// libcudascope_torch_allocator.so, by the CUDA driver through libcudascope_inject.so), and one
// initial-exec variable puts the library's whole TLS block, the static CUDA runtime's 4 KiB
// (4 KiB-aligned) included, into the static TLS surplus, which is far smaller: dlopen then
// fails with "cannot allocate memory in static TLS block".
thread_local int invalid_device_of_thread = -1;
// Threads whose invalid_device_of_thread is set: while 0 (always, but for a DeviceGuard given
// a bad index) the hot paths skip that thread-local read.
std::atomic<int> threads_with_invalid_device{0};
// The backend once lazy_backend() has initialised it, for the hot paths (a plain load instead
// of backend()'s function-local static and lazy_backend()'s checks).
std::atomic<Backend*> initialized_backend{nullptr};

void set_invalid_device(int device) {
  if (invalid_device_of_thread < 0) threads_with_invalid_device.fetch_add(1, std::memory_order_relaxed);
  invalid_device_of_thread = device;
}

void clear_invalid_device() {
  if (threads_with_invalid_device.load(std::memory_order_relaxed) == 0 || invalid_device_of_thread < 0) return;
  invalid_device_of_thread = -1;
  threads_with_invalid_device.fetch_sub(1, std::memory_order_relaxed);
}
// device_count() once the backend is initialised (0 before): resolve_device's common case
// is then one compare after asking the backend for the current device.
std::atomic<int> known_device_count{0};

void mark_bad_fork() {
  if (initialized.load() || driver_initialized.load()) in_bad_fork.store(true);
}

void register_fork_handler() {
  std::call_once(fork_handler_once, [] { pthread_atfork(nullptr, nullptr, &mark_bad_fork); });
}

bool read_launch_blocking() {
  const char* value = std::getenv("CUDA_LAUNCH_BLOCKING");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// strtoul's reading of one CUDA_VISIBLE_DEVICES entry: an optional sign and the digits that
// follow ("1gpu" is 1); -1 when there are none.
long leading_ordinal(std::string_view entry) {
  std::size_t i = 0;
  while (i < entry.size() && entry[i] == ' ') ++i;
  bool negative = false;
  if (i < entry.size() && (entry[i] == '+' || entry[i] == '-')) negative = entry[i++] == '-';
  long value = 0;
  std::size_t digits = 0;
  for (; i < entry.size() && entry[i] >= '0' && entry[i] <= '9' && digits < 9; ++i, ++digits) {
    value = value * 10 + (entry[i] - '0');
  }
  if (digits == 0) return -1;
  return negative ? -value : value;
}

[[noreturn]] void throw_invalid_index(int index, int count) {
  throw Error(error_code::kInvalidDevice, "cudascope::cuda", __FILE__, __LINE__,
              "device index " + std::to_string(index) + " is out of range (device_count() = " +
                  std::to_string(count) + ")");
}

int resolve_device_slow(int device) {
  Backend& b = lazy_backend();
  const int count = b.device_count();
  if (count == 0) {
    throw Error(error_code::kNoDevice, "cudascope::cuda", __FILE__, __LINE__,
                std::string("no device is available on the '") + b.name() + "' backend");
  }
  const int index = device >= 0 ? device : invalid_device_of_thread >= 0 ? invalid_device_of_thread : b.current_device();
  if (index >= count) throw_invalid_index(index, count);
  known_device_count.store(count, std::memory_order_release);
  return index;
}

}  // namespace

void throw_error(int code, const char* call, const char* file, int line, const std::string& detail) {
  if (code == error_code::kMemoryAllocation) throw OutOfMemoryError(call, file, line, detail);
  throw Error(code, call, file, line, detail);
}

Backend& lazy_backend() {
  if (in_bad_fork.load(std::memory_order_relaxed)) {
    throw Error(error_code::kInitializationError, "cudascope::cuda::init", __FILE__, __LINE__,
                "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
                "initialise the runtime only in the child processes (spawn, not fork)");
  }
  Backend& selected = backend();
  if (!initialized.load(std::memory_order_acquire)) {
    std::call_once(init_once, [&] {
      register_fork_handler();
      initialized_backend.store(&selected, std::memory_order_release);
      initialized.store(true, std::memory_order_release);
      tools::start_metrics_from_environment();
    });
  }
  return selected;
}

int resolve_device(int device) {
  const int known = known_device_count.load(std::memory_order_acquire);
  if (known > 0 && threads_with_invalid_device.load(std::memory_order_relaxed) == 0 &&
      !in_bad_fork.load(std::memory_order_relaxed)) [[likely]] {
    const int index = device < 0 ? initialized_backend.load(std::memory_order_relaxed)->current_device() : device;
    if (index < known) return index;
  }
  return resolve_device_slow(device);
}

void on_synchronizing_call(const char* call) {
  const int mode = sync_debug_mode.load(std::memory_order_relaxed);
  if (mode == 0) return;
  if (mode == 2) {
    throw Error(error_code::kNotSupported, call, __FILE__, __LINE__,
                "called a synchronizing CUDA operation while sync_debug_mode is 'error'");
  }
  std::fprintf(stderr, "cudascope: warning: %s is a synchronizing CUDA operation (sync_debug_mode 'warn')\n", call);
}

bool launch_blocking() {
  static const bool blocking = read_launch_blocking();
  return blocking;
}

int thread_device() {
  Backend* ready = initialized_backend.load(std::memory_order_acquire);
  if (ready != nullptr && threads_with_invalid_device.load(std::memory_order_relaxed) == 0 &&
      !in_bad_fork.load(std::memory_order_relaxed)) [[likely]] {
    return ready->current_device();
  }
  Backend& b = lazy_backend();
  return invalid_device_of_thread >= 0 ? invalid_device_of_thread : b.current_device();
}

// As torch's c10::cuda::SetDevice: no cudaSetDevice when the device is already current (a
// needless one would create a context on a device the program never uses).
void set_thread_device(int device) {
  Backend& b = lazy_backend();
  clear_invalid_device();
  if (b.current_device() != device) b.set_device(device);
}

void note_driver_initialized() {
  register_fork_handler();
  driver_initialized.store(true);
}

int visible_device_count(const char* visible, int raw_count) {
  constexpr int kMaxDevices = 64;  // torch's list when CUDA_VISIBLE_DEVICES is unset
  if (visible == nullptr) return std::min(raw_count, kMaxDevices);
  const std::string_view text(visible);
  if (text.starts_with("GPU-") || text.starts_with("MIG-")) return -1;
  std::vector<long> ordinals;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const long ordinal = leading_ordinal(text.substr(start, end - start));
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) return 0;  // a repeat: none
    if (ordinal < 0) break;
    ordinals.push_back(ordinal);
    start = end + 1;
  }
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    if (ordinals[i] >= raw_count) return static_cast<int>(i);
  }
  return static_cast<int>(ordinals.size());
}

}  // namespace detail

std::string DeviceProperties::uuid_string() const {
  char text[64];
  const auto& u = uuid;
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return text;
}

std::string backend_name() { return detail::backend().name(); }

// is_available and device_count ask the backend without initialising the runtime (torch
// counts with NVML), so a process may fork after asking and its children still use CUDA;
// in a child forked after initialisation they still answer, as torch's cached count does.
bool is_available() {
  try {
    return detail::backend().device_count() > 0;
  } catch (const Error&) {
    return false;  // an unknown CUDASCOPE_BACKEND: no device to offer
  }
}

bool is_initialized() { return detail::initialized.load() && !detail::in_bad_fork.load(); }

void init() { detail::lazy_backend(); }

int device_count() { return detail::backend().device_count(); }

int current_device() { return detail::thread_device(); }

void set_device(int device) {
  if (device < 0) return;
  detail::set_thread_device(detail::resolve_device(device));
}

void synchronize(int device) {
  const int index = detail::resolve_device(device);
  detail::on_synchronizing_call("cudaDeviceSynchronize");
  detail::lazy_backend().synchronize_device(index);
  if (sanitizer::detail::active()) sanitizer::detail::device_synchronized(index);
}

std::string get_device_name(int device) { return get_device_properties(device).name; }

std::pair<int, int> get_device_capability(int device) {
  const DeviceProperties props = get_device_properties(device);
  return {props.major, props.minor};
}

DeviceProperties get_device_properties(int device) {
  const int index = detail::resolve_device(device);
  return detail::lazy_backend().properties(index);
}

std::vector<std::string> get_arch_list() {
#ifdef CUDASCOPE_CUDA_ARCHS
  return detail::parse_arch_list(CUDASCOPE_CUDA_ARCHS);
#else
  return {};
#endif
}

// As torch's: one -gencode per entry, "code=sm_80" for a device binary, "code=compute_75" for PTX.
std::string get_gencode_flags() {
  std::string flags;
  for (const std::string& arch : get_arch_list()) {
    const std::string number = arch.substr(arch.find('_') + 1);
    if (!flags.empty()) flags += ' ';
    flags += "-gencode compute=compute_" + number + ",code=" + arch;
  }
  return flags;
}

bool can_device_access_peer(int device, int peer_device) {
  const int a = detail::resolve_device(device);
  const int b = detail::resolve_device(peer_device);
  if (a == b) return false;
  return detail::lazy_backend().can_access_peer(a, b);
}

std::pair<std::size_t, std::size_t> mem_get_info(int device) {
  const int index = detail::resolve_device(device);
  return detail::lazy_backend().mem_get_info(index);
}

int get_sync_debug_mode() { return detail::sync_debug_mode.load(); }

void set_sync_debug_mode(int mode) {
  if (mode < 0 || mode > 2) {
    throw Error(error_code::kInvalidValue, "set_sync_debug_mode", __FILE__, __LINE__,
                "mode " + std::to_string(mode) + " is not one of 0 (default), 1 (warn), 2 (error)");
  }
  detail::sync_debug_mode.store(mode);
}

void set_sync_debug_mode(const std::string& mode) {
  if (mode == "default") return set_sync_debug_mode(0);
  if (mode == "warn") return set_sync_debug_mode(1);
  if (mode == "error") return set_sync_debug_mode(2);
  throw Error(error_code::kInvalidValue, "set_sync_debug_mode", __FILE__, __LINE__,
              "mode '" + mode + "' is not one of default, warn, error");
}

DeviceGuard::DeviceGuard(int device) noexcept {
  if (device < 0) return;
  try {
    original_ = detail::thread_device();
    detail::set_thread_device(device);
  } catch (...) {
    // A guard cannot throw (it may be built during unwinding): the index it could not make
    // current is remembered, so the first call that uses the current device throws naming it.
    detail::set_invalid_device(device);
  }
}

DeviceGuard::~DeviceGuard() noexcept {
  if (original_ < 0) return;
  try {
    detail::set_thread_device(original_);
  } catch (...) {
    detail::set_invalid_device(original_);
  }
}

}  // namespace cudascope::cuda
