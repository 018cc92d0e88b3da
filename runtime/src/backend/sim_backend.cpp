// The simulated device: host memory and worker threads standing in for a GPU, so that
// everything above the Backend seam runs in CI and on machines without a GPU.
#include "backend.h"
#include "sim_event.h"
#include "sim_graphs.h"
#include "sim_memory.h"
#include "sim_stream.h"

#include "../check.h"
#include "../jiterator/host_jit.h"
#include "../runtime_state.h"
#include "../tool_loader.h"

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/util/env_value.h>


#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cudascope::cuda::detail {
namespace {

constexpr int kDefaultDevices = 2;
constexpr std::size_t kDefaultCapacity = 16ULL << 30;

int read_device_count() {
  try {
    return static_cast<int>(util::env_sim_devices().value_or(kDefaultDevices));
  } catch (const util::EnvError& e) {
    throw_error(error_code::kInvalidValue, "CUDASCOPE_SIM_DEVICES", __FILE__, __LINE__, e.what());
  }
}

std::size_t read_capacity() {
  const auto text = util::env_text("CUDASCOPE_SIM_MEMORY");
  if (!text) return kDefaultCapacity;
  return parse_byte_size(text->c_str(), "CUDASCOPE_SIM_MEMORY");
}

// CUDASCOPE_SIM_MALLOC_LATENCY ("300us", "2ms", "1s"; default 0): how long the simulated
// cudaMalloc takes, for studies of allocator behaviour under a driver's real cost (on a GPU a
// cudaMalloc takes tens of microseconds to milliseconds).
std::chrono::microseconds read_malloc_latency() {
  const auto set = util::env_text("CUDASCOPE_SIM_MALLOC_LATENCY");
  if (!set) return std::chrono::microseconds(0);
  const char* text = set->c_str();
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  const std::string unit = end != nullptr ? end : "";
  long long scale = -1;
  if (unit == "us") scale = 1;
  if (unit == "ms") scale = 1000;
  if (unit == "s") scale = 1000000;
  if (value == 0 && unit.empty()) scale = 0;
  CUDASCOPE_CHECK(end != text && value >= 0 && scale >= 0 && value <= 60LL * 1000000 / std::max(scale, 1LL),
                  error_code::kInvalidValue, "CUDASCOPE_SIM_MALLOC_LATENCY",
                  std::string("CUDASCOPE_SIM_MALLOC_LATENCY='") + text +
                      "' must be a duration of at most 60 s with a unit: us, ms or s (e.g. 300us)");
  return std::chrono::microseconds(value * scale);
}

namespace obs = cudascope::cuda::instrumentation;

// The calling thread's current device (cudaSetDevice / cudaGetDevice). Global-dynamic TLS
// (the shared library's default), never initial-exec: the runtime is also loaded with dlopen.
thread_local int current_device_of_thread = 0;

// The kernel the cuda backend's launch_spin runs, by the name CUPTI reports for it.
constexpr const char* kSpinKernelName = "cudascope::cuda::detail::(anonymous namespace)::cudascope_spin_kernel(unsigned long long)";

obs::CopyKind observed_kind(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHostToDevice: return obs::CopyKind::kHostToDevice;
    case CopyKind::kDeviceToHost: return obs::CopyKind::kDeviceToHost;
    case CopyKind::kDeviceToDevice: return obs::CopyKind::kDeviceToDevice;
    case CopyKind::kHostToHost: return obs::CopyKind::kHostToHost;
    case CopyKind::kDefault: break;
  }
  return obs::CopyKind::kDefault;
}

// Whether work queued on `s` reports its activity: while an observer is installed, and while
// the stream captures (a graph's nodes then report when a replay runs under an observer, as
// CUPTI records the kernels of graphs captured before tracing began).
bool reports_activity(const SimStream& s) { return obs::observer() != nullptr || s.capture() != nullptr; }

// Reports a synchronizing call's wait when an observer is installed: the call on the calling
// thread and the wait, joined by one correlation id, as CUPTI records the runtime call and its
// synchronisation record.
template <typename Wait>
void observed_sync(obs::SyncActivity::Type type, const char* call, int device, std::int64_t stream_id, Wait&& wait) {
  obs::Observer* observer = obs::observer();
  if (observer == nullptr) return wait();
  const std::uint64_t start = obs::host_time_ns();
  wait();
  const std::uint64_t end = obs::host_time_ns();
  const auto correlation = obs::next_correlation_id();
  observer->on_api_call({call, start, end, correlation});
  observer->on_sync({type, device, stream_id, start, end, correlation});
}

class SimBackend final : public Backend {
 public:
  SimBackend()
      : device_count_(read_device_count()), capacity_(read_capacity()), malloc_latency_(read_malloc_latency()) {
    devices_ = std::make_unique<SimDevice[]>(static_cast<std::size_t>(device_count_));
    // Like the driver, the sim backend loads the tool named by CUDA_INJECTION64_PATH, so
    // `cudascope run` records programs on sim as it does on a GPU (tool_loader.h).
    tools::attach_sim_injection();
  }

  ~SimBackend() override {
    // Streams join their workers; drain them before the memory they may touch goes away.
    for (int i = 0; i < device_count_; ++i) {
      std::lock_guard lock(devices_[i].streams_mutex);
      devices_[i].streams.clear();
      devices_[i].default_stream.reset();
    }
  }

  const char* name() const noexcept override { return "sim"; }

  // A simple model: utilization is the share of wall time the device's streams were busy
  // since the previous sample; temperature and power follow it; energy integrates power.
  DeviceTelemetry telemetry(int device) override {
    SimMemory& memory = memory_of(device, "nvmlDeviceGetUtilizationRates");
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::uint64_t busy = 0;
    {
      std::lock_guard lock(d.streams_mutex);
      if (d.default_stream) busy += d.default_stream->busy_ns();
      for (auto& stream : d.streams) busy += stream->busy_ns();
    }
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
    std::lock_guard lock(d.telemetry_mutex);
    if (d.last_sample_ns != 0 && now > d.last_sample_ns) {
      const double share = static_cast<double>(busy - d.last_busy_ns) / static_cast<double>(now - d.last_sample_ns);
      d.utilization = static_cast<int>(std::min(100.0, share * 100.0) + 0.5);
      d.energy_mj += d.power_mw() * static_cast<double>(now - d.last_sample_ns) / 1e9;
    }
    d.last_sample_ns = now;
    d.last_busy_ns = busy;
    DeviceTelemetry figures;
    figures.utilization_percent = d.utilization;
    figures.temperature_celsius = 30 + d.utilization / 2;
    figures.power_milliwatts = static_cast<int>(d.power_mw());
    figures.sm_clock_mhz = 1980;
    figures.energy_millijoules = static_cast<std::uint64_t>(d.energy_mj);
    figures.memory_used_bytes = memory.used();
    figures.memory_total_bytes = memory.capacity();
    if (memory.used() > 0) figures.processes.push_back({static_cast<unsigned>(getpid()), memory.used()});
    return figures;
  }
  int device_count() override { return device_count_; }

  DeviceProperties properties(int device) override {
    check_device(device, "cudaGetDeviceProperties");
    DeviceProperties props;
    props.name = "cudascope sim device";
    props.major = 9;
    props.minor = 0;
    props.total_memory = capacity_;
    props.multi_processor_count = 132;
    for (std::size_t i = 0; i < props.uuid.size(); ++i) {
      props.uuid[i] = static_cast<std::uint8_t>(0x5a ^ (i * 17) ^ static_cast<std::size_t>(device));
    }
    props.l2_cache_size = 50 << 20;
    props.max_threads_per_multi_processor = 2048;
    props.regs_per_multiprocessor = 65536;
    props.shared_memory_per_block = 48 << 10;
    props.shared_memory_per_multiprocessor = 228 << 10;
    props.clock_rate_khz = 1980000;
    props.memory_clock_rate_khz = 2619000;
    props.memory_bus_width = 5120;
    props.pci_bus_id = device;
    return props;
  }

  // Per thread, as the CUDA runtime keeps it; device 0 until the thread sets one.
  int current_device() override { return current_device_of_thread; }
  void set_device(int device) override {
    check_device(device, "cudaSetDevice");
    current_device_of_thread = device;
  }

  void synchronize_device(int device) override {
    check_device(device, "cudaDeviceSynchronize");
    graphs_.check_capture_safe(device, "cudaDeviceSynchronize");
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::vector<SimStream*> streams;
    {
      std::lock_guard lock(d.streams_mutex);
      if (d.default_stream) streams.push_back(d.default_stream.get());
      for (auto& stream : d.streams) streams.push_back(stream.get());
    }
    observed_sync(obs::SyncActivity::Type::kDevice, "cudaDeviceSynchronize", device, -1, [&] {
      for (SimStream* stream : streams) stream->synchronize();
    });
  }

  std::pair<std::size_t, std::size_t> mem_get_info(int device) override {
    SimMemory& memory = memory_of(device, "cudaMemGetInfo");
    return {memory.capacity() - memory.used(), memory.capacity()};
  }

  bool can_access_peer(int device, int peer) override {
    check_device(device, "cudaDeviceCanAccessPeer");
    check_device(peer, "cudaDeviceCanAccessPeer");
    return device != peer;
  }

  void enable_peer_access(int device, int peer) override {
    CUDASCOPE_CHECK(can_access_peer(device, peer), error_code::kPeerAccessUnsupported, "cudaDeviceEnablePeerAccess",
                    "device " + std::to_string(device) + " cannot access itself as a peer");
  }

  void* malloc(int device, std::size_t size) override {
    SimMemory& memory = memory_of(device, "cudaMalloc");
    graphs_.check_capture_safe(device, "cudaMalloc");
    if (malloc_latency_.count() > 0) std::this_thread::sleep_for(malloc_latency_);
    void* ptr = memory.allocate(size);
    if (ptr != nullptr) observe_device_memory(device, ptr, size, false);
    return ptr;
  }
  void free(int device, void* ptr) override {
    graphs_.check_capture_safe(device, "cudaFree");
    synchronize_device(device);  // cudaFree synchronises the device
    const std::size_t size = memory_of(device, "cudaFree").release(ptr);
    observe_device_memory(device, ptr, size, true);
  }
  // What CUPTI's memory records report on a GPU, for the profiler's device-memory figures.
  static void observe_device_memory(int device, void* ptr, std::size_t size, bool release) {
    if (obs::Observer* o = obs::observer())
      o->on_device_memory({device, reinterpret_cast<std::uintptr_t>(ptr), size, release, obs::host_time_ns()});
  }
  void* malloc_host_pinned(std::size_t size) override {
    void* ptr = std::malloc(size == 0 ? 1 : size);
    std::lock_guard lock(pinned_mutex_);
    pinned_[reinterpret_cast<std::uintptr_t>(ptr)] = size == 0 ? 1 : size;
    return ptr;
  }
  void free_host_pinned(void* ptr) override {
    {
      std::lock_guard lock(pinned_mutex_);
      pinned_.erase(reinterpret_cast<std::uintptr_t>(ptr));
    }
    std::free(ptr);
  }
  // Registered memory counts as pinned for copies, as cudaHostRegister makes it.
  void host_register(void* ptr, std::size_t size) override {
    std::lock_guard lock(pinned_mutex_);
    const bool added = pinned_.emplace(reinterpret_cast<std::uintptr_t>(ptr), size == 0 ? 1 : size).second;
    CUDASCOPE_CHECK(added, error_code::kInvalidValue, "cudaHostRegister",
                    "the memory is already registered or pinned");
  }
  void host_unregister(void* ptr) override {
    std::lock_guard lock(pinned_mutex_);
    CUDASCOPE_CHECK(pinned_.erase(reinterpret_cast<std::uintptr_t>(ptr)) == 1, error_code::kInvalidValue,
                    "cudaHostUnregister", "the memory is not registered");
  }

  // As cudaMallocAsync, from the pool of the calling thread's current device: a caller that
  // did not make `device` current is an error here, where on a GPU it would silently
  // allocate on the wrong device.
  void* malloc_async(int device, std::size_t size, StreamHandle) override {
    CUDASCOPE_CHECK(current_device_of_thread == device, error_code::kInvalidDevice, "cudaMallocAsync",
                    "asked for device " + std::to_string(device) + " while device " +
                        std::to_string(current_device_of_thread) +
                        " is current (cudaMallocAsync allocates from the current device's pool)");
    void* ptr = memory_of(device, "cudaMallocAsync").allocate(size);
    if (ptr != nullptr) observe_device_memory(device, ptr, size, false);
    return ptr;
  }
  // Stream-ordered: the memory returns to the device once the work queued before it is done
  // (and is reported then, as held memory).
  void free_async(int device, void* ptr, StreamHandle stream) override {
    SimMemory& memory = memory_of(device, "cudaFreeAsync");
    stream_of(device, stream).enqueue([&memory, ptr, device] {
      const std::size_t size = memory.release(ptr);
      observe_device_memory(device, ptr, size, true);
    });
  }

  std::size_t vm_granularity(int device) override {
    check_device(device, "cuMemGetAllocationGranularity");
    return SimMemory::kGranularity;
  }
  void* vm_reserve(int device, std::size_t size) override { return memory_of(device, "cuMemAddressReserve").reserve(size); }
  void vm_release(int device, void* base, std::size_t size) override {
    memory_of(device, "cuMemAddressFree").unreserve(base, size);
  }
  bool vm_map(int device, void* ptr, std::size_t size) override { return memory_of(device, "cuMemMap").map(ptr, size); }
  void vm_unmap(int device, void* ptr, std::size_t size) override {
    synchronize_device(device);
    memory_of(device, "cuMemUnmap").unmap(ptr, size);
  }

  StreamHandle stream_create(int device, int priority) override {
    check_device(device, "cudaStreamCreateWithPriority");
    auto stream = std::make_unique<SimStream>(device, priority, next_stream_id_.fetch_add(1));
    SimStream* handle = stream.get();
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::lock_guard lock(d.streams_mutex);
    d.streams.push_back(std::move(stream));
    return handle;
  }

  void stream_destroy(int device, StreamHandle stream) override {
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::unique_ptr<SimStream> doomed;
    {
      std::lock_guard lock(d.streams_mutex);
      for (auto it = d.streams.begin(); it != d.streams.end(); ++it) {
        if (it->get() == stream) {
          doomed = std::move(*it);
          d.streams.erase(it);
          break;
        }
      }
    }
  }

  bool stream_query(int device, StreamHandle stream) override {
    SimStream& s = stream_of(device, stream);
    graphs_.check_not_capturing(s, "cudaStreamQuery");
    return s.query();
  }
  void stream_synchronize(int device, StreamHandle stream) override {
    SimStream& s = stream_of(device, stream);
    graphs_.check_not_capturing(s, "cudaStreamSynchronize");
    observed_sync(obs::SyncActivity::Type::kStream, "cudaStreamSynchronize", device, s.id(), [&] { s.synchronize(); });
  }

  void stream_wait_event(int device, StreamHandle stream, EventHandle event) override {
    auto* sim_event = static_cast<SimEvent*>(event);
    if (graphs_.wait_event(event, stream_of(device, stream))) return;  // a fork or join of a capture
    const std::uint64_t generation = sim_event->issued();
    if (sim_event->state()->reached(generation)) return;
    stream_of(device, stream).enqueue([state = sim_event->state(), generation] { state->wait_for(generation); },
                                      "event wait");
  }

  std::pair<int, int> stream_priority_range() override { return {0, -5}; }

  std::int64_t stream_id(int device, StreamHandle stream) override { return stream_of(device, stream).id(); }

  EventHandle event_create(int device, EventFlags flags) override {
    check_device(device, "cudaEventCreateWithFlags");
    return new SimEvent(device, flags.enable_timing, flags.interprocess);
  }
  void event_destroy(int, EventHandle event) override {
    graphs_.forget_event(event);
    delete static_cast<SimEvent*>(event);
  }

  void event_record(int device, EventHandle event, StreamHandle stream) override {
    auto* sim_event = static_cast<SimEvent*>(event);
    if (graphs_.record_event(event, stream_of(device, stream))) return;  // a point of a capture
    const std::uint64_t generation = sim_event->issue();
    stream_of(device, stream).enqueue_mark([state = sim_event->state(), generation] { state->complete(generation); });
    if (launch_blocking()) stream_of(device, stream).synchronize();
  }

  bool event_query(int, EventHandle event) override {
    return static_cast<SimEvent*>(event)->done();
  }

  void event_synchronize(int, EventHandle event) override {
    auto* sim_event = static_cast<SimEvent*>(event);
    observed_sync(obs::SyncActivity::Type::kEvent, "cudaEventSynchronize", sim_event->device(), -1,
                  [&] { sim_event->state()->wait_for(sim_event->issued()); });
  }

  float event_elapsed_ms(EventHandle start, EventHandle end) override {
    auto* a = static_cast<SimEvent*>(start);
    auto* b = static_cast<SimEvent*>(end);
    CUDASCOPE_CHECK(a->timing() && b->timing(), error_code::kInvalidResourceHandle, "cudaEventElapsedTime",
                    "both events must be created with enable_timing=true");
    CUDASCOPE_CHECK(a->issued() > 0 && b->issued() > 0 && a->done() && b->done(),
                    error_code::kNotReady, "cudaEventElapsedTime", "both events must be recorded and complete");
    return static_cast<float>(static_cast<double>(b->completed_at_ns() - a->completed_at_ns()) / 1e6);
  }

  IpcEventHandle event_ipc_handle(int, EventHandle event) override { return static_cast<SimEvent*>(event)->ipc_handle(); }
  EventHandle event_open_ipc(int device, const IpcEventHandle& handle) override {
    check_device(device, "cudaIpcOpenEventHandle");
    return new SimEvent(device, handle);
  }

  // CUDA IPC memory: the segment moves into shared memory (sim_shared_segment.h) and the
  // handle carries its name and size.
  IpcMemHandle ipc_get_mem_handle(int device, void* base) override {
    SimMemory& memory = memory_of(device, "cudaIpcGetMemHandle");
    const std::uint64_t call_start = obs::host_time_ns();
    // The first share moves the pages: queued work that may still write the segment lands
    // first. Later shares leave the work queued (the consumer waits on the share's event).
    if (!memory.is_shared(base)) drain_streams(device);
    const auto [name, size] = memory.share(base);
    report_api_call("cudaIpcGetMemHandle", call_start);
    return encode_mem_handle(name, size);
  }

  void* ipc_open_mem_handle(int device, const IpcMemHandle& handle) override {
    SimMemory& memory = memory_of(device, "cudaIpcOpenMemHandle");
    const std::uint64_t call_start = obs::host_time_ns();
    const SimMemHandle decoded = decode_mem_handle(handle);
    CUDASCOPE_CHECK(decoded.pid != static_cast<std::uint32_t>(getpid()), error_code::kInvalidValue,
                    "cudaIpcOpenMemHandle", "a process cannot open its own IPC memory handle (as in CUDA)");
    void* ptr = memory.open_shared(decoded.name, decoded.size);
    report_api_call("cudaIpcOpenMemHandle", call_start);
    return ptr;
  }

  void ipc_close_mem_handle(int device, void* ptr) override {
    const std::uint64_t call_start = obs::host_time_ns();
    memory_of(device, "cudaIpcCloseMemHandle").close_shared(ptr);
    report_api_call("cudaIpcCloseMemHandle", call_start);
  }

  // Launches, copies and fills report an ApiCall on the calling thread and the device
  // activity on the stream's worker, joined by a correlation id, as CUPTI does.
  void memcpy_async(int device, void* dst, const void* src, std::size_t bytes, CopyKind kind,
                    StreamHandle stream) override {
    SimStream& s = stream_of(device, stream);
    if (reports_activity(s)) {
      obs::Observer* observer = obs::observer();
      const std::uint64_t call_start = obs::host_time_ns();
      const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
      const obs::CopyKind observed = observed_kind(kind);
      const int src_device = kind == CopyKind::kDeviceToHost || kind == CopyKind::kDeviceToDevice ? device : -1;
      const int dst_device = kind == CopyKind::kHostToDevice || kind == CopyKind::kDeviceToDevice ? device : -1;
      s.enqueue([dst, src, bytes, device, id = s.id(), correlation, observed, src_device, dst_device] {
        const std::uint64_t start = obs::host_time_ns();
        std::memmove(dst, src, bytes);
        if (obs::Observer* o = obs::observer()) {
          o->on_copy({observed, device, src_device, dst_device, id, bytes, start, obs::host_time_ns(), correlation});
        }
      }, "memcpy");
      if (observer != nullptr) observer->on_api_call({"cudaMemcpyAsync", call_start, obs::host_time_ns(), correlation});
    } else {
      s.enqueue([dst, src, bytes] { std::memmove(dst, src, bytes); }, "memcpy");
    }
    // As CUDA: a copy from or to pageable host memory returns only once the host side is done
    // with (here: once the copy has run), so the caller may reuse or free its buffer.
    if (launch_blocking() || touches_pageable_host(dst, src, bytes, kind)) s.synchronize();
  }

  void memset_async(int device, void* dst, int value, std::size_t bytes, StreamHandle stream) override {
    SimStream& s = stream_of(device, stream);
    if (reports_activity(s)) {
      obs::Observer* observer = obs::observer();
      const std::uint64_t call_start = obs::host_time_ns();
      const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
      s.enqueue([dst, value, bytes, device, id = s.id(), correlation] {
        const std::uint64_t start = obs::host_time_ns();
        std::memset(dst, value, bytes);
        if (obs::Observer* o = obs::observer()) {
          o->on_memset({device, id, bytes, value, start, obs::host_time_ns(), correlation});
        }
      }, "memset");
      if (observer != nullptr) observer->on_api_call({"cudaMemsetAsync", call_start, obs::host_time_ns(), correlation});
    } else {
      s.enqueue([dst, value, bytes] { std::memset(dst, value, bytes); }, "memset");
    }
    if (launch_blocking()) s.synchronize();
  }

  void launch_tensor_kernel(int device, StreamHandle stream, const TensorKernel& kernel) override {
    SimStream& s = stream_of(device, stream);
    if (reports_activity(s)) {
      obs::Observer* observer = obs::observer();
      const std::uint64_t call_start = obs::host_time_ns();
      const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
      s.enqueue([kernel, device, id = s.id(), correlation] {
        const std::uint64_t start = obs::host_time_ns();
        run_tensor_kernel_on_host(kernel);
        if (obs::Observer* o = obs::observer()) {
          const auto grid = static_cast<std::int32_t>(kernel.grid != 0 ? kernel.grid : 1);
          const std::int32_t block = kernel.grid != 0 ? static_cast<std::int32_t>(kRngBlock) : 1;
          o->on_kernel({tensor_kernel_name(kernel), device, id, start, obs::host_time_ns(), correlation, {grid, 1, 1},
                        {block, 1, 1}, 32, 0, 0});
        }
      }, "kernel");
      if (observer != nullptr) observer->on_api_call({"cudaLaunchKernel", call_start, obs::host_time_ns(), correlation});
    } else {
      s.enqueue([kernel] { run_tensor_kernel_on_host(kernel); }, "kernel");
    }
    if (launch_blocking()) s.synchronize();
  }

  void launch_spin(int device, StreamHandle stream, std::uint64_t nanoseconds) override {
    SimStream& s = stream_of(device, stream);
    const auto spin = [nanoseconds] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(nanoseconds);
      std::this_thread::sleep_until(until);
    };
    if (reports_activity(s)) {
      obs::Observer* observer = obs::observer();
      const std::uint64_t call_start = obs::host_time_ns();
      const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
      s.enqueue([spin, device, id = s.id(), correlation] {
        const std::uint64_t start = obs::host_time_ns();
        spin();
        if (obs::Observer* o = obs::observer()) {
          o->on_kernel({kSpinKernelName, device, id, start, obs::host_time_ns(), correlation, {1, 1, 1}, {1, 1, 1},
                        16, 0, 0});
        }
      }, "kernel");
      if (observer != nullptr) observer->on_api_call({"cudaLaunchKernel", call_start, obs::host_time_ns(), correlation});
    } else {
      s.enqueue(spin, "kernel");
    }
    if (launch_blocking()) s.synchronize();
  }

  // CUDA graphs (sim_graphs.h).
  void stream_begin_capture(int device, StreamHandle stream, CaptureMode mode) override {
    CUDASCOPE_CHECK(stream != nullptr, error_code::kStreamCaptureUnsupported, "cudaStreamBeginCapture",
                    "the legacy default stream cannot capture");
    graphs_.begin_capture(device, &stream_of(device, stream), mode);
  }
  GraphHandle stream_end_capture(int device, StreamHandle stream) override {
    return graphs_.end_capture(&stream_of(device, stream));
  }
  CaptureInfo stream_capture_info(int device, StreamHandle stream) override {
    return graphs_.capture_info(&stream_of(device, stream));
  }
  CaptureMode exchange_thread_capture_mode(CaptureMode mode) override { return graphs_.exchange_thread_mode(mode); }
  GraphExecHandle graph_instantiate(int, GraphHandle graph) override { return graphs_.instantiate(graph); }
  void graph_launch(int device, GraphExecHandle exec, StreamHandle stream) override {
    SimStream& s = stream_of(device, stream);
    const std::uint64_t call_start = obs::host_time_ns();
    obs::Observer* observer = obs::observer();
    const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
    graphs_.launch(exec, s, correlation);
    if (observer != nullptr) observer->on_api_call({"cudaGraphLaunch", call_start, obs::host_time_ns(), correlation});
    if (launch_blocking()) s.synchronize();
  }
  void graph_destroy(int, GraphHandle graph) override { graphs_.destroy_graph(graph); }
  void graph_exec_destroy(int, GraphExecHandle exec) override { graphs_.destroy_exec(exec); }
  void graph_debug_dot_print(GraphHandle graph, const std::string& path) override { graphs_.write_dot(graph, path); }
  std::size_t graph_node_count(GraphHandle graph) override { return graphs_.node_count(graph); }

  // jiterator: the code compiled for the host (jiterator/host_jit.h) on the calling thread,
  // run on the stream's worker and reported as a kernel, as launch_tensor_kernel is.
  void launch_jit_kernel(int device, StreamHandle stream, const JitKernel& kernel) override {
    SimStream& s = stream_of(device, stream);
    const HostJitKernel& compiled = host_jit_kernel(kernel);
    const auto run = [fn = compiled.function, args = kernel.args] { fn(&args); };
    if (reports_activity(s)) {
      obs::Observer* observer = obs::observer();
      const std::uint64_t call_start = obs::host_time_ns();
      const std::uint32_t correlation = observer != nullptr ? obs::next_correlation_id() : 0;
      s.enqueue([run, name = compiled.name.c_str(), device, id = s.id(), correlation] {
        const std::uint64_t start = obs::host_time_ns();
        run();
        if (obs::Observer* o = obs::observer()) {
          o->on_kernel({name, device, id, start, obs::host_time_ns(), correlation, {1, 1, 1}, {1, 1, 1}, 32, 0, 0});
        }
      }, "kernel");
      if (observer != nullptr) observer->on_api_call({"cudaLaunchKernel", call_start, obs::host_time_ns(), correlation});
    } else {
      s.enqueue(run, "kernel");
    }
    if (launch_blocking()) s.synchronize();
  }

 private:
  struct SimDevice {
    std::once_flag memory_once;
    std::unique_ptr<SimMemory> memory;
    std::mutex streams_mutex;
    std::unique_ptr<SimStream> default_stream;
    std::vector<std::unique_ptr<SimStream>> streams;
    std::mutex telemetry_mutex;
    std::uint64_t last_sample_ns = 0;
    std::uint64_t last_busy_ns = 0;
    int utilization = 0;
    double energy_mj = 0;
    double power_mw() const { return 70000.0 + 6300.0 * utilization; }
  };

  // The sim's cudaIpcMemHandle_t: magic, the shared-memory name, the size, the producer's pid.
  static constexpr char kMemHandleMagic[8] = {'c', 's', 'm', 'e', 'm', 's', 'i', 'm'};
  static constexpr std::size_t kNameAt = 8, kNameBytes = 40, kSizeAt = 48, kPidAt = 56;
  struct SimMemHandle {
    std::string name;
    std::size_t size;
    std::uint32_t pid;
  };

  static IpcMemHandle encode_mem_handle(const std::string& name, std::size_t size) {
    IpcMemHandle handle{};
    CUDASCOPE_CHECK(name.size() < kNameBytes, error_code::kInvalidValue, "cudaIpcGetMemHandle", "name too long: " + name);
    std::memcpy(handle.data(), kMemHandleMagic, sizeof kMemHandleMagic);
    std::memcpy(handle.data() + kNameAt, name.data(), name.size());
    const std::uint64_t size64 = size;
    const auto pid = static_cast<std::uint32_t>(getpid());
    std::memcpy(handle.data() + kSizeAt, &size64, sizeof size64);
    std::memcpy(handle.data() + kPidAt, &pid, sizeof pid);
    return handle;
  }

  static SimMemHandle decode_mem_handle(const IpcMemHandle& handle) {
    CUDASCOPE_CHECK(std::memcmp(handle.data(), kMemHandleMagic, sizeof kMemHandleMagic) == 0,
                    error_code::kInvalidResourceHandle, "cudaIpcOpenMemHandle",
                    "the handle was not made by the sim backend's cudaIpcGetMemHandle");
    const char* name = reinterpret_cast<const char*>(handle.data() + kNameAt);
    SimMemHandle decoded{std::string(name, strnlen(name, kNameBytes)), 0, 0};
    std::uint64_t size64 = 0;
    std::memcpy(&size64, handle.data() + kSizeAt, sizeof size64);
    std::memcpy(&decoded.pid, handle.data() + kPidAt, sizeof decoded.pid);
    decoded.size = static_cast<std::size_t>(size64);
    return decoded;
  }

  // Waits for the device's queued work without reporting a synchronisation (the caller is
  // not a synchronizing call in CUDA; the sim needs the work done to move the pages).
  void drain_streams(int device) {
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::vector<SimStream*> streams;
    {
      std::lock_guard lock(d.streams_mutex);
      if (d.default_stream) streams.push_back(d.default_stream.get());
      for (auto& stream : d.streams) streams.push_back(stream.get());
    }
    for (SimStream* stream : streams) stream->synchronize();
  }

  static void report_api_call(const char* name, std::uint64_t start) {
    if (obs::Observer* observer = obs::observer()) {
      observer->on_api_call({name, start, obs::host_time_ns(), obs::next_correlation_id()});
    }
  }

  void check_device(int device, const char* call) const {
    CUDASCOPE_CHECK(device >= 0 && device < device_count_, error_code::kInvalidDevice, call,
                    "sim device " + std::to_string(device) + " does not exist (CUDASCOPE_SIM_DEVICES=" +
                        std::to_string(device_count_) + ")");
  }

  SimMemory& memory_of(int device, const char* call) {
    check_device(device, call);
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::call_once(d.memory_once, [&] { d.memory = std::make_unique<SimMemory>(device, capacity_); });
    return *d.memory;
  }

  // True when the host side of a host<->device copy is not pinned memory from this backend.
  bool touches_pageable_host(const void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    const void* host = kind == CopyKind::kHostToDevice ? src : kind == CopyKind::kDeviceToHost ? dst : nullptr;
    if (host == nullptr || bytes == 0) return false;
    const auto address = reinterpret_cast<std::uintptr_t>(host);
    std::lock_guard lock(pinned_mutex_);
    auto it = pinned_.upper_bound(address);
    if (it == pinned_.begin()) return true;
    --it;
    return address + bytes > it->first + it->second;
  }

  SimStream& stream_of(int device, StreamHandle stream) {
    if (stream != nullptr) return *static_cast<SimStream*>(stream);
    check_device(device, "cudaStreamLegacy");
    SimDevice& d = devices_[static_cast<std::size_t>(device)];
    std::lock_guard lock(d.streams_mutex);
    if (!d.default_stream) d.default_stream = std::make_unique<SimStream>(device, 0, 0);
    return *d.default_stream;
  }

  const int device_count_;
  const std::size_t capacity_;
  const std::chrono::microseconds malloc_latency_;
  std::unique_ptr<SimDevice[]> devices_;
  std::atomic<std::int64_t> next_stream_id_{1};
  std::mutex pinned_mutex_;
  std::map<std::uintptr_t, std::size_t> pinned_;  // malloc_host_pinned's blocks
  SimGraphs graphs_;
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace cudascope::cuda::detail
