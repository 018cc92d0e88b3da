// The cuda backend: the CUDA runtime API, and the driver's virtual-memory API resolved at
// run time through cudaGetDriverEntryPointByVersion (so nothing links libcuda, which a
// machine without a driver does not have).
#include "backend.h"
#include "cuda_kernels.h"

#include "../nvml/nvml_library.h"
#include "../nvml/nvml_device_figures.h"

#include "../arch_list.h"
#include "../check.h"
#include "../jiterator/device_jit.h"
#include "../runtime_state.h"
#include "../tool_loader.h"

#include <cudascope/cuda/device.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#define CUDASCOPE_CUDA_CHECK(expr)                                                               \
  do {                                                                                           \
    const cudaError_t cudascope_status_ = (expr);                                                \
    if (cudascope_status_ != cudaSuccess) {                                                      \
      ::cudascope::cuda::detail::throw_cuda_error(cudascope_status_, #expr, __FILE__, __LINE__,  \
                                                  cudaGetErrorString(cudascope_status_));        \
    }                                                                                            \
  } while (0)

// A launch of the runtime's own kernels: as CUDASCOPE_CUDA_CHECK, and where the device has no
// kernel image in this build, the error says which architectures the build has and what to
// configure it with (the ones a device of another generation needs).
#define CUDASCOPE_LAUNCH_CHECK(expr, device)                                                     \
  do {                                                                                           \
    const cudaError_t cudascope_status_ = (expr);                                                \
    if (cudascope_status_ != cudaSuccess) {                                                      \
      ::cudascope::cuda::detail::throw_cuda_error(cudascope_status_, #expr, __FILE__, __LINE__,  \
                                                  launch_error_text(cudascope_status_, (device))); \
    }                                                                                            \
  } while (0)

#define CUDASCOPE_CU_CHECK(expr)                                                                  \
  do {                                                                                            \
    const CUresult cudascope_result_ = (expr);                                                    \
    if (cudascope_result_ != CUDA_SUCCESS) {                                                      \
      ::cudascope::cuda::detail::throw_error(cudascope_result_ == CUDA_ERROR_OUT_OF_MEMORY        \
                                                 ? ::cudascope::cuda::error_code::kMemoryAllocation \
                                                 : static_cast<int>(cudascope_result_),           \
                                             #expr, __FILE__, __LINE__, "driver error");          \
    }                                                                                             \
  } while (0)

namespace cudascope::cuda::detail {

// A failed runtime call: its error is cleared first, so a non-sticky one does not resurface at
// the next launch.
[[noreturn]] static void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line,
                                          const std::string& detail) {
  cudaGetLastError();
  throw_error(static_cast<int>(status), call, file, line, detail);
}

std::string backend_error_name(int code) {
  const char* name = cudaGetErrorName(static_cast<cudaError_t>(code));
  return name != nullptr ? name : "cudaError(" + std::to_string(code) + ")";
}

namespace {

std::string launch_error_text(cudaError_t status, int device) {
  std::string text = cudaGetErrorString(status);
  if (status != cudaErrorNoKernelImageForDevice) return text;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return text;
  }
  const std::vector<std::string> archs = get_arch_list();
  if (archs_run_on(archs, major, minor)) return text;
  return text + " (device " + std::to_string(device) + ": " + no_kernel_image_advice(archs, major, minor) + ")";
}

// The driver entry points expandable segments need.
struct DriverVm {
  decltype(&cuMemAddressReserve) address_reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
};

template <typename Fn>
void resolve(const char* symbol, Fn& fn) {
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  void* address = nullptr;
  CUDASCOPE_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found));
  CUDASCOPE_CHECK(found == cudaDriverEntryPointSuccess && address != nullptr, error_code::kNotSupported,
                  "cudaGetDriverEntryPointByVersion", std::string("the driver has no ") + symbol);
  fn = reinterpret_cast<Fn>(address);
}

const DriverVm& driver_vm() {
  static const DriverVm vm = [] {
    DriverVm table;
    resolve("cuMemAddressReserve", table.address_reserve);
    resolve("cuMemAddressFree", table.address_free);
    resolve("cuMemCreate", table.create);
    resolve("cuMemRelease", table.release);
    resolve("cuMemMap", table.map);
    resolve("cuMemUnmap", table.unmap);
    resolve("cuMemSetAccess", table.set_access);
    resolve("cuMemGetAllocationGranularity", table.granularity);
    return table;
  }();
  return vm;
}

CUmemAllocationProp allocation_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Makes `device` current on the calling thread for one backend call and restores the
// previous one, as torch's CUDAGuard: the current device is asked of the CUDA runtime (a
// thread-local read there), never cached, since code outside the runtime may change it.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    CUDASCOPE_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) CUDASCOPE_CUDA_CHECK(cudaSetDevice(device));
    else previous_ = -1;
  }
  ~ScopedDevice() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;
};

// A query's answer: true when the work is done, false when it is not ready yet (an answer,
// not an error, so it is cleared); any other status throws.
bool done_or_throw(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return true;
  cudaGetLastError();
  if (status == cudaErrorNotReady) return false;
  throw_error(static_cast<int>(status), call, __FILE__, __LINE__, cudaGetErrorString(status));
}

// NVML's count of the machine's GPUs; -1 when NVML is missing or fails. NVML creates no CUDA
// context, so asking leaves the process free to fork (torch's _device_count_nvml). NVML is
// shut down again (its init and shutdown are counted, so a user of it elsewhere keeps it):
// left attached to every GPU of the machine, it is state a PyTorch process does not have,
// and the process's layout decides where the driver places cudaMalloc ranges (on a two-GPU
// machine a replay's addresses, and so its best-fit choices, differed from PyTorch's).
int nvml_raw_device_count() {
  try {
    void* library = tools::open_nvml();
    auto* init = reinterpret_cast<int (*)()>(tools::find_symbol(library, {"nvmlInit_v2", "nvmlInit"}));
    auto* count = reinterpret_cast<int (*)(unsigned int*)>(
        tools::find_symbol(library, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}));
    auto* shutdown = reinterpret_cast<int (*)()>(tools::find_symbol(library, {"nvmlShutdown"}));
    unsigned int n = 0;
    if (init == nullptr || count == nullptr || init() != 0) return -1;
    const int status = count(&n);
    if (shutdown != nullptr) shutdown();
    if (status != 0) return -1;
    return static_cast<int>(n);
  } catch (const Error&) {
    return -1;
  }
}

// The devices this process may use, without initialising the driver where NVML can tell;
// otherwise cudaGetDeviceCount, which runs cuInit: from then on a forked child cannot use
// CUDA, and the runtime treats a fork as it does after initialisation (torch's poison_fork).
int count_devices() {
  const int raw = nvml_raw_device_count();
  const int visible = raw < 0 ? -1 : visible_device_count(std::getenv("CUDA_VISIBLE_DEVICES"), raw);
  if (visible >= 0) return visible;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: zero devices, as torch reports
    return 0;
  }
  // Only a driver with devices has state a fork would break (the `auto` backend asks here on
  // machines without one, then runs on sim).
  if (count > 0) note_driver_initialized();
  return count;
}

class CudaBackend final : public Backend {
 public:
  const char* name() const noexcept override { return "cuda"; }

  int device_count() override {
    std::call_once(count_once_, [this] { device_count_ = count_devices(); });
    return device_count_;
  }

  DeviceProperties properties(int device) override {
    cudaDeviceProp prop{};
    CUDASCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    DeviceProperties out;
    out.name = prop.name;
    out.major = prop.major;
    out.minor = prop.minor;
    out.total_memory = prop.totalGlobalMem;
    out.multi_processor_count = prop.multiProcessorCount;
    std::memcpy(out.uuid.data(), prop.uuid.bytes, out.uuid.size());
    out.l2_cache_size = prop.l2CacheSize;
    out.max_threads_per_multi_processor = prop.maxThreadsPerMultiProcessor;
    out.warp_size = prop.warpSize;
    out.regs_per_multiprocessor = prop.regsPerMultiprocessor;
    out.shared_memory_per_block = prop.sharedMemPerBlock;
    out.shared_memory_per_multiprocessor = prop.sharedMemPerMultiprocessor;
    int value = 0;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrClockRate, device) == cudaSuccess) out.clock_rate_khz = value;
    if (cudaDeviceGetAttribute(&value, cudaDevAttrMemoryClockRate, device) == cudaSuccess) {
      out.memory_clock_rate_khz = value;
    }
    out.memory_bus_width = prop.memoryBusWidth;
    out.pci_bus_id = prop.pciBusID;
    out.pci_device_id = prop.pciDeviceID;
    out.pci_domain_id = prop.pciDomainID;
    out.is_integrated = prop.integrated != 0;
    out.is_multi_gpu_board = prop.isMultiGpuBoard != 0;
    return out;
  }

  int current_device() override {
    int device = 0;
    CUDASCOPE_CUDA_CHECK(cudaGetDevice(&device));
    return device;
  }
  void set_device(int device) override { CUDASCOPE_CUDA_CHECK(cudaSetDevice(device)); }

  void synchronize_device(int device) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaDeviceSynchronize());
  }

  std::pair<std::size_t, std::size_t> mem_get_info(int device) override {
    ScopedDevice on(device);
    std::size_t free_bytes = 0, total_bytes = 0;
    CUDASCOPE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
  }

  bool can_access_peer(int device, int peer) override {
    int can = 0;
    CUDASCOPE_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
    return can != 0;
  }

  void enable_peer_access(int device, int peer) override {
    ScopedDevice on(device);
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
      return;
    }
    CUDASCOPE_CUDA_CHECK(status);
  }

  void* malloc(int device, std::size_t size) override {
    ScopedDevice on(device);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear the sticky-free error so later calls do not see it
      return nullptr;
    }
    CUDASCOPE_CUDA_CHECK(status);
    return ptr;
  }

  void free(int device, void* ptr) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaFree(ptr));
  }

  void* malloc_host_pinned(std::size_t size) override {
    void* ptr = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaHostAlloc(&ptr, size, cudaHostAllocDefault));
    return ptr;
  }
  void free_host_pinned(void* ptr) override { CUDASCOPE_CUDA_CHECK(cudaFreeHost(ptr)); }
  void host_register(void* ptr, std::size_t size) override {
    CUDASCOPE_CUDA_CHECK(cudaHostRegister(ptr, size, cudaHostRegisterDefault));
  }
  void host_unregister(void* ptr) override { CUDASCOPE_CUDA_CHECK(cudaHostUnregister(ptr)); }

  // The caller has made `device` current (as PyTorch's CudaMallocAsyncAllocator does); the
  // guard here costs one cudaGetDevice and keeps a wrong caller from allocating elsewhere.
  void* malloc_async(int device, std::size_t size, StreamHandle stream) override {
    ScopedDevice on(device);
    void* ptr = nullptr;
    const cudaError_t status = cudaMallocAsync(&ptr, size, static_cast<cudaStream_t>(stream));
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    CUDASCOPE_CUDA_CHECK(status);
    return ptr;
  }
  void free_async(int device, void* ptr, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream)));
  }

  std::size_t vm_granularity(int device) override {
    const CUmemAllocationProp prop = allocation_prop(device);
    std::size_t granularity = 0;
    CUDASCOPE_CU_CHECK(driver_vm().granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return granularity;
  }

  void* vm_reserve(int, std::size_t size) override {
    CUdeviceptr base = 0;
    CUDASCOPE_CU_CHECK(driver_vm().address_reserve(&base, size, 0, 0, 0));
    return reinterpret_cast<void*>(base);
  }

  void vm_release(int, void* base, std::size_t size) override {
    CUDASCOPE_CU_CHECK(driver_vm().address_free(reinterpret_cast<CUdeviceptr>(base), size));
  }

  bool vm_map(int device, void* ptr, std::size_t size) override {
    const DriverVm& vm = driver_vm();
    const CUmemAllocationProp prop = allocation_prop(device);
    CUmemGenericAllocationHandle handle = 0;
    const CUresult created = vm.create(&handle, size, &prop, 0);
    if (created == CUDA_ERROR_OUT_OF_MEMORY) return false;
    CUDASCOPE_CU_CHECK(created);
    const auto address = reinterpret_cast<CUdeviceptr>(ptr);
    CUDASCOPE_CU_CHECK(vm.map(address, size, 0, handle, 0));
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUDASCOPE_CU_CHECK(vm.set_access(address, size, &access, 1));
    std::lock_guard lock(vm_mutex_);
    vm_handles_[address] = {size, handle};
    return true;
  }

  void vm_unmap(int device, void* ptr, std::size_t size) override {
    synchronize_device(device);  // the memory may still be in use by queued work
    const DriverVm& vm = driver_vm();
    const auto start = reinterpret_cast<CUdeviceptr>(ptr);
    std::lock_guard lock(vm_mutex_);
    // Unmap every mapping inside [start, start + size): maps and unmaps need not pair up.
    for (auto it = vm_handles_.lower_bound(start); it != vm_handles_.end() && it->first < start + size;) {
      CUDASCOPE_CU_CHECK(vm.unmap(it->first, it->second.size));
      CUDASCOPE_CU_CHECK(vm.release(it->second.handle));
      it = vm_handles_.erase(it);
    }
  }

  StreamHandle stream_create(int device, int priority) override {
    ScopedDevice on(device);
    cudaStream_t stream = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
    return stream;
  }

  void stream_destroy(int device, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
  }

  // Stream and event calls make the handle's device current: a null handle is the legacy
  // default stream of whichever device is current.
  bool stream_query(int device, StreamHandle stream) override {
    ScopedDevice on(device);
    return done_or_throw(cudaStreamQuery(static_cast<cudaStream_t>(stream)), "cudaStreamQuery");
  }

  void stream_synchronize(int device, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  void stream_wait_event(int device, StreamHandle stream, EventHandle event) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
  }

  std::pair<int, int> stream_priority_range() override {
    int least = 0, greatest = 0;
    CUDASCOPE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    return {least, greatest};
  }

  std::int64_t stream_id(int device, StreamHandle stream) override {
    if (stream == nullptr) return 0;
    ScopedDevice on(device);
    unsigned long long id = 0;
    CUDASCOPE_CUDA_CHECK(cudaStreamGetId(static_cast<cudaStream_t>(stream), &id));
    return static_cast<std::int64_t>(id);
  }

  EventHandle event_create(int device, EventFlags flags) override {
    ScopedDevice on(device);
    unsigned int bits = cudaEventDefault;
    if (!flags.enable_timing) bits |= cudaEventDisableTiming;
    if (flags.blocking) bits |= cudaEventBlockingSync;
    if (flags.interprocess) bits |= cudaEventInterprocess | cudaEventDisableTiming;
    cudaEvent_t event = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&event, bits));
    return event;
  }

  void event_destroy(int device, EventHandle event) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }

  void event_record(int device, EventHandle event, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
  }

  bool event_query(int, EventHandle event) override {
    return done_or_throw(cudaEventQuery(static_cast<cudaEvent_t>(event)), "cudaEventQuery");
  }

  void event_synchronize(int, EventHandle event) override {
    CUDASCOPE_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  }

  float event_elapsed_ms(EventHandle start, EventHandle end) override {
    float ms = 0;
    CUDASCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
    return ms;
  }

  IpcEventHandle event_ipc_handle(int, EventHandle event) override {
    cudaIpcEventHandle_t handle{};
    CUDASCOPE_CUDA_CHECK(cudaIpcGetEventHandle(&handle, static_cast<cudaEvent_t>(event)));
    IpcEventHandle out{};
    static_assert(sizeof(handle) == sizeof(out));
    std::memcpy(out.data(), &handle, out.size());
    return out;
  }

  IpcMemHandle ipc_get_mem_handle(int device, void* base) override {
    ScopedDevice on(device);
    cudaIpcMemHandle_t handle{};
    CUDASCOPE_CUDA_CHECK(cudaIpcGetMemHandle(&handle, base));
    IpcMemHandle out{};
    static_assert(sizeof(handle) == sizeof(out));
    std::memcpy(out.data(), &handle, out.size());
    return out;
  }

  void* ipc_open_mem_handle(int device, const IpcMemHandle& handle) override {
    ScopedDevice on(device);
    cudaIpcMemHandle_t cuda_handle{};
    std::memcpy(&cuda_handle, handle.data(), handle.size());
    void* ptr = nullptr;
    // As torch: lazy peer access, so memory of another device is usable here too.
    CUDASCOPE_CUDA_CHECK(cudaIpcOpenMemHandle(&ptr, cuda_handle, cudaIpcMemLazyEnablePeerAccess));
    return ptr;
  }

  void ipc_close_mem_handle(int device, void* ptr) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaIpcCloseMemHandle(ptr));
  }

  EventHandle event_open_ipc(int device, const IpcEventHandle& handle) override {
    ScopedDevice on(device);
    cudaIpcEventHandle_t cuda_handle{};
    std::memcpy(&cuda_handle, handle.data(), handle.size());
    cudaEvent_t event = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaIpcOpenEventHandle(&event, cuda_handle));
    return event;
  }

  void memcpy_async(int device, void* dst, const void* src, std::size_t bytes, CopyKind kind,
                    StreamHandle stream) override {
    ScopedDevice on(device);
    cudaMemcpyKind cuda_kind = cudaMemcpyDefault;
    switch (kind) {
      case CopyKind::kHostToDevice: cuda_kind = cudaMemcpyHostToDevice; break;
      case CopyKind::kDeviceToHost: cuda_kind = cudaMemcpyDeviceToHost; break;
      case CopyKind::kDeviceToDevice: cuda_kind = cudaMemcpyDeviceToDevice; break;
      case CopyKind::kHostToHost: cuda_kind = cudaMemcpyHostToHost; break;
      case CopyKind::kDefault: break;
    }
    CUDASCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cuda_kind, static_cast<cudaStream_t>(stream)));
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  void memset_async(int device, void* dst, int value, std::size_t bytes, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(stream)));
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  DeviceTelemetry telemetry(int device) override {
    NvmlLibrary& nvml = NvmlLibrary::instance();
    void* handle = nvml_handle(nvml, device);
    DeviceTelemetry figures;
    figures.utilization_percent = nvml.utilization(handle, /*memory=*/false);
    figures.memory_utilization_percent = nvml.utilization(handle, /*memory=*/true);
    figures.temperature_celsius = nvml.temperature(handle);
    figures.power_milliwatts = nvml.power_milliwatts(handle);
    figures.sm_clock_mhz = nvml.sm_clock_mhz(handle);
    figures.energy_millijoules = nvml.energy_millijoules(handle);
    const auto [free_bytes, total_bytes] = mem_get_info(device);
    figures.memory_used_bytes = total_bytes - free_bytes;
    figures.memory_total_bytes = total_bytes;
    figures.processes = nvml.processes(handle);
    nvml.read_extra_figures(handle, figures);
    NvmlDeviceFigures::instance().read(handle, figures);
    return figures;
  }

  void launch_tensor_kernel(int device, StreamHandle stream, const TensorKernel& kernel) override {
    ScopedDevice on(device);
    CUDASCOPE_LAUNCH_CHECK(launch_tensor_kernel_cuda(static_cast<cudaStream_t>(stream), kernel), device);
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  void launch_spin(int device, StreamHandle stream, std::uint64_t nanoseconds) override {
    ScopedDevice on(device);
    CUDASCOPE_LAUNCH_CHECK(launch_spin_kernel(static_cast<cudaStream_t>(stream), nanoseconds), device);
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  // CUDA graphs: the runtime API's capture calls. An error ending a capture leaves the
  // stream out of capture (cudaStreamEndCapture's contract), so the caller can go on.
  void stream_begin_capture(int device, StreamHandle stream, CaptureMode mode) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(
        cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), static_cast<cudaStreamCaptureMode>(mode)));
  }

  GraphHandle stream_end_capture(int device, StreamHandle stream) override {
    ScopedDevice on(device);
    cudaGraph_t graph = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph));
    return graph;
  }

  CaptureInfo stream_capture_info(int device, StreamHandle stream) override {
    ScopedDevice on(device);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    CUDASCOPE_CUDA_CHECK(cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, &id));
    return {static_cast<CaptureStatus>(status), status == cudaStreamCaptureStatusNone ? 0 : id};
  }

  CaptureMode exchange_thread_capture_mode(CaptureMode mode) override {
    auto value = static_cast<cudaStreamCaptureMode>(mode);
    CUDASCOPE_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&value));
    return static_cast<CaptureMode>(value);
  }

  // As torch: freed memory of the graph's allocation nodes returns at each launch.
  GraphExecHandle graph_instantiate(int device, GraphHandle graph) override {
    ScopedDevice on(device);
    cudaGraphExec_t exec = nullptr;
    CUDASCOPE_CUDA_CHECK(cudaGraphInstantiateWithFlags(&exec, static_cast<cudaGraph_t>(graph),
                                                       cudaGraphInstantiateFlagAutoFreeOnLaunch));
    return exec;
  }

  void graph_launch(int device, GraphExecHandle exec, StreamHandle stream) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), static_cast<cudaStream_t>(stream)));
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  void graph_destroy(int device, GraphHandle graph) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaGraphDestroy(static_cast<cudaGraph_t>(graph)));
  }

  void graph_exec_destroy(int device, GraphExecHandle exec) override {
    ScopedDevice on(device);
    CUDASCOPE_CUDA_CHECK(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec)));
  }

  void graph_debug_dot_print(GraphHandle graph, const std::string& path) override {
    CUDASCOPE_CUDA_CHECK(
        cudaGraphDebugDotPrint(static_cast<cudaGraph_t>(graph), path.c_str(), cudaGraphDebugDotFlagsVerbose));
  }

  std::size_t graph_node_count(GraphHandle graph) override {
    std::size_t count = 0;
    CUDASCOPE_CUDA_CHECK(cudaGraphGetNodes(static_cast<cudaGraph_t>(graph), nullptr, &count));
    return count;
  }

  // jiterator: NVRTC and the CUDA runtime's library API (jiterator/device_jit.h).
  void launch_jit_kernel(int device, StreamHandle stream, const JitKernel& kernel) override {
    ScopedDevice on(device);
    launch_device_jit_kernel(device, stream, kernel);
    if (launch_blocking()) CUDASCOPE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

 private:
  // NVML's handle for a CUDA device, matched once by UUID.
  void* nvml_handle(NvmlLibrary& nvml, int device) {
    std::lock_guard lock(nvml_mutex_);
    if (nvml_handles_.size() <= static_cast<std::size_t>(device)) nvml_handles_.resize(device + 1, nullptr);
    void*& handle = nvml_handles_[static_cast<std::size_t>(device)];
    if (handle == nullptr) handle = nvml.device_by_uuid(properties(device).uuid_string());
    return handle;
  }

  struct Mapping {
    std::size_t size;
    CUmemGenericAllocationHandle handle;
  };
  std::once_flag count_once_;
  int device_count_ = 0;
  std::mutex vm_mutex_;
  std::map<CUdeviceptr, Mapping> vm_handles_;
  std::mutex nvml_mutex_;
  std::vector<void*> nvml_handles_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

bool cuda_backend_has_device() { return count_devices() > 0; }

}  // namespace cudascope::cuda::detail
