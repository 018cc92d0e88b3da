#include "cupti_source.h"

#include "nccl_nvtx.h"

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/profiler/external_correlation.h>
#include <cudascope/profiler/record_buffers.h>
#include <cudascope/util/env_value.h>

#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// Throws std::runtime_error naming the CUPTI call, its result, file and line.
#define CUDASCOPE_CUPTI_CALL(call)                                                                   \
  do {                                                                                              \
    const CUptiResult cudascope_cupti_status = (call);                                              \
    if (cudascope_cupti_status != CUPTI_SUCCESS) {                                                  \
      ::cudascope::profiler::detail::throw_cupti_error(cudascope_cupti_status, #call, __FILE__, __LINE__); \
    }                                                                                               \
  } while (0)

namespace cudascope::profiler::detail {
namespace {

[[noreturn]] void throw_cupti_error(CUptiResult status, const char* call, const char* file, int line) {
  const char* text = nullptr;
  cuptiGetResultString(status, &text);
  const std::string advice = cupti_failure_advice(status);
  throw std::runtime_error(std::string(call) + " failed: " + (text != nullptr ? text : "unknown CUPTI error") + " (" +
                           std::to_string(static_cast<int>(status)) + ") at " + file + ":" + std::to_string(line) +
                           (advice.empty() ? "" : ". " + advice));
}

std::uint64_t cupti_timestamp() { return cuda::instrumentation::host_time_ns(); }

// "13.0" for the toolkit this CUPTI comes with.
std::string cuda_release() { return std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10); }

// The kinds that record each piece of work or each call as it happens. A sampled session
// switches them on only during its windows: on a launch-bound loop, CUPTI's copy and memset
// records alone, kept on, cost about 20% even with no copy in the loop
// (bench/results/overhead.md, cupti_floor).
std::vector<CUpti_ActivityKind> work_kinds(const ActivitySet& activities) {
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
  if (activities.contains(Activity::kKernel)) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (activities.contains(Activity::kMemcpy)) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
  }
  if (activities.contains(Activity::kMemset)) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (activities.contains(Activity::kSync)) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (activities.contains(Activity::kDriver)) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (activities.contains(Activity::kOverhead)) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  return kinds;
}

// The work kinds a sampled window switches on: those whose records metrics read (kernels,
// copies, memsets, synchronisations, and driver calls when asked for: NVTX labels of kernels
// launched through the driver). Not CUPTI's overhead or external-correlation records, which
// only a trace shows: each kind a window enables costs a launch-bound loop more than its
// share of the time the window is open (bench/results/overhead.md). A trace window (every
// kernel, for a trace) switches all of work_kinds.
std::vector<CUpti_ActivityKind> sampled_work_kinds(const ActivitySet& activities) {
  std::vector<CUpti_ActivityKind> kinds = work_kinds(activities);
  std::erase_if(kinds, [](CUpti_ActivityKind kind) {
    return kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION || kind == CUPTI_ACTIVITY_KIND_OVERHEAD;
  });
  return kinds;
}

// The kinds enabled for the whole session: devices, contexts and the device memory the
// process obtains and returns (whatever allocator asked: a gauge, so never sampled; these
// records come with cudaMalloc-like calls only), and the work kinds unless they are sampled.
std::vector<CUpti_ActivityKind> session_kinds(const ActivitySet& activities, bool sampled) {
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT};
  if (activities.contains(Activity::kAllocator)) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (!sampled) {
    for (CUpti_ActivityKind kind : work_kinds(activities)) kinds.push_back(kind);
  }
  return kinds;
}

// Kinds the device or CUPTI version may not offer: a session records what it can.
bool optional_kind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_DEVICE || kind == CUPTI_ACTIVITY_KIND_CONTEXT ||
         kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION || kind == CUPTI_ACTIVITY_KIND_OVERHEAD ||
         kind == CUPTI_ACTIVITY_KIND_MEMORY2;
}

constexpr std::size_t kAlignment = 8;
constexpr std::size_t kPooledBuffers = 4;

// Allocates an activity buffer and touches every page, so CUPTI never takes a page fault
// while it writes records (it may do so on the launching thread).
std::uint8_t* new_buffer(std::size_t bytes) {
  auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kAlignment, bytes));
  if (buffer != nullptr) std::memset(buffer, 0, bytes);
  return buffer;
}

// Tells CUPTI whether the buffers it is handed are all zeros. Unless told, CUPTI zeroes each
// one (8 MiB) itself on the thread that needed it: the launching thread, once a flush (every
// 200 ms) has completed its buffer (cupti_activity.h, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER).
// A CUPTI without the attribute zeroes as before, which costs time, not records.
void say_buffers_are_zeroed(bool zeroed) noexcept {
  std::uint8_t value = zeroed ? 1 : 0;
  std::size_t size = sizeof value;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &value);
}

// CUPTI's runtime callbacks by name; with launch_only, those the "launch" activity records:
// the calls that put work on a stream or wait for it.
std::vector<CUpti_CallbackId> runtime_callbacks(bool launch_only) {
  std::vector<CUpti_CallbackId> out;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    const std::string_view n(name);
    const bool launch = n.find("Launch") != n.npos || n.find("Memcpy") != n.npos || n.find("Memset") != n.npos ||
                        n.find("Synchronize") != n.npos;
    if (launch || !launch_only) out.push_back(cbid);
  }
  return out;
}

// The runtime calls a session records, picked one by one even for full API tracing: once
// the RUNTIME kind has been disabled as a whole, CUPTI (13.0) records no picked call for the
// rest of the process, so a later session (a `cudascope trace --pid` window) would lose its
// launches and their external correlation ids.
const std::vector<CUpti_CallbackId>& picked_runtime_callbacks(const ActivitySet& activities) {
  static const std::vector<CUpti_CallbackId> all = runtime_callbacks(false);
  static const std::vector<CUpti_CallbackId> launches = runtime_callbacks(true);
  static const std::vector<CUpti_CallbackId> none;
  if (activities.contains(Activity::kRuntime)) return all;
  return activities.contains(Activity::kLaunch) ? launches : none;
}

// The launch calls counted for exact launch totals: the runtime's, and the driver's when the
// program calls the driver itself (Triton, cuBLAS's own launches). A driver launch made
// inside a runtime launch is not counted again.
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,          CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,       CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

// How deep the thread is in runtime launch calls, as counted under one subscription: a call
// whose exit never came back (the subscription ended in between) must not keep a later one
// from counting this thread's launches.
struct LaunchDepth {
  std::uint64_t subscription = 0;
  int depth = 0;
};
thread_local LaunchDepth runtime_launch_depth;
std::atomic<std::uint64_t> launch_subscriptions{0};

// One relaxed increment per launch call, and a relaxed load; nothing else on the launching thread.
void count_launch(KernelSampling& sampling, CUpti_CallbackDomain domain, const CUpti_CallbackData& call) noexcept {
  LaunchDepth& runtime = runtime_launch_depth;
  const std::uint64_t subscription = launch_subscriptions.load(std::memory_order_relaxed);
  if (runtime.subscription != subscription) runtime = {subscription, 0};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (call.callbackSite == CUPTI_API_ENTER) {
      if (runtime.depth++ == 0) sampling.count_launch();
    } else if (runtime.depth > 0) {
      --runtime.depth;
    }
  } else if (call.callbackSite == CUPTI_API_ENTER && runtime.depth == 0) {
    sampling.count_launch();
  }
}

void CUPTIAPI on_launch_call(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto& call = *static_cast<const CUpti_CallbackData*>(data);
  auto& callbacks = *static_cast<CuptiSource::LaunchCallbacks*>(userdata);
  if (callbacks.counter != nullptr) count_launch(*callbacks.counter, domain, call);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && callbacks.nccl_launches.load(std::memory_order_relaxed)) {
    record_nccl_launch(cbid, call);
  }
}

// NCCL's launches are worth recording only beside its kernels and its NVTX ranges; with the
// whole driver API on, CUPTI records them itself.
bool records_nccl_launches(const ActivitySet& activities) {
  return activities.contains(Activity::kKernel) && activities.contains(Activity::kNvtx) &&
         !activities.contains(Activity::kDriver);
}

// A flag of ours for CUPTI (util::env_cupti_*), nullopt when unset; a bad value is said on
// stderr and `otherwise` done.
std::optional<bool> cupti_flag(std::optional<bool> (*read)(), const char* otherwise) {
  try {
    return read();
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; %s\n", e.what(), otherwise);
    return std::nullopt;
  }
}

bool discard_requested() { return cupti_flag(&util::env_cupti_discard, "CUPTI's records are kept").value_or(false); }

// CUDASCOPE_CUPTI_PER_THREAD_BUFFERS: CUPTI's choice between one activity buffer per
// launching thread (its default since CUDA 12.3) and buffers shared by all threads. Set
// before the buffer callbacks are registered, as cupti_activity.h requires.
void choose_per_thread_buffers() {
  const std::optional<bool> per_thread = cupti_flag(&util::env_cupti_per_thread_buffers, "CUPTI's default kept");
  if (!per_thread) return;
  std::uint8_t value = *per_thread ? 1 : 0;
  std::size_t size = sizeof value;
  CUDASCOPE_CUPTI_CALL(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &value));
}

}  // namespace

std::string cupti_failure_advice(CUptiResult status) {
  switch (status) {
    case CUPTI_ERROR_NOT_INITIALIZED:
      // CUPTI's documented answer to a driver older than its toolkit.
      return "CUPTI says this when the NVIDIA driver is older than the CUDA " + cuda_release() +
             " this build's CUPTI belongs to (CUDA 13 needs driver 580 or later): update the driver, or build "
             "cudascope with the toolkit the driver supports";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "Another CUPTI client (Nsight Systems or Compute, torch.profiler, another cudascope recording) holds "
             "this process's CUPTI: record without it";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return "The driver lets administrators alone profile (NVreg_RestrictProfilingToAdminUsers=1): run as one, or "
             "have the module option set to 0";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "This is a virtual GPU whose host has not enabled profiling for it (vGPU profiling is a host setting)";
    default:
      return {};
  }
}

// A driver launch made while the calling thread is inside an NCCL range that names a
// communicator (nccl_nvtx.h) becomes the driver API record CUPTI would write with the driver
// API on: its correlation id is the kernel's, and it lies inside the range on this thread,
// which is how the analysis finds the range, and the communicator, of an NCCL kernel. The
// entry callback keeps the start in CUPTI's per-call slot; any other launch costs one
// thread-local load and that store.
void record_nccl_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept {
  if (call.correlationData == nullptr) return;
  const bool in_nccl_call = nccl_communicator_on_this_thread() != 0;
  if (call.callbackSite == CUPTI_API_ENTER) {
    *call.correlationData = in_nccl_call ? cupti_timestamp() : 0;
    return;
  }
  if (*call.correlationData == 0 || !in_nccl_call) return;
  Record r = make_record(RecordKind::kDriverApi);
  r.correlation_id = call.correlationId;
  r.start_ns = *call.correlationData;
  r.end_ns = cupti_timestamp();
  const auto* result = static_cast<const CUresult*>(call.functionReturnValue);
  // CUPTI's function names are global constants, as a record's name must be.
  r.u.api = {call.functionName, cbid, result != nullptr ? static_cast<std::int32_t>(*result) : 0, 0};
  RecordBuffers::process().emit(r);
}

std::atomic<CuptiSource*> CuptiSource::live_{nullptr};
std::atomic<int> CuptiSource::callbacks_in_flight_{0};

CuptiSource::CuptiSource(const SessionOptions& options)
    : options_(options),
      sampled_window_kinds_(sampled_work_kinds(options.activities)),
      trace_window_kinds_(work_kinds(options.activities)),
      discard_(discard_requested()) {}

CuptiSource::~CuptiSource() {
  try {
    stop();
  } catch (...) {
  }
  for (std::uint8_t* buffer : free_buffers_) std::free(buffer);
}

void CuptiSource::start() {
  CuptiSource* expected = nullptr;
  if (!live_.compare_exchange_strong(expected, this)) throw std::logic_error("a CUPTI source is already running");
  try {
    {
      // Ready before the first request: a request never allocates or faults pages.
      const std::size_t bytes = buffer_bytes();
      std::lock_guard lock(pool_mutex_);
      while (free_buffers_.size() < kPooledBuffers) {
        std::uint8_t* buffer = new_buffer(bytes);
        if (buffer == nullptr) break;
        free_buffers_.push_back(buffer);
      }
    }
    CUDASCOPE_CUPTI_CALL(cuptiActivityRegisterTimestampCallback(&cupti_timestamp));
    // API records then name threads by their OS id, as NVTX and the runtime do.
    CUDASCOPE_CUPTI_CALL(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
    say_buffers_are_zeroed(true);  // before the first request: every buffer, pooled or new, is zeros
    choose_per_thread_buffers();
    CUDASCOPE_CUPTI_CALL(cuptiActivityRegisterCallbacks(
        reinterpret_cast<CUpti_BuffersCallbackRequestFunc>(&requested_trampoline),
        reinterpret_cast<CUpti_BuffersCallbackCompleteFunc>(&completed_trampoline)));
    const bool sampled = options_.kernel_sampling != nullptr;
    enabling_ = true;  // from here a failure has kinds of this session's to undo
    for (CUpti_ActivityKind kind : session_kinds(options_.activities, sampled)) {
      const CUptiResult status = cuptiActivityEnable(kind);
      if (status != CUPTI_SUCCESS && !optional_kind(kind)) CUDASCOPE_CUPTI_CALL(cuptiActivityEnable(kind));
    }
    for (CUpti_CallbackId cbid : sampled ? std::vector<CUpti_CallbackId>{} : picked_runtime_callbacks(options_.activities)) {
      if (cuptiActivityEnableRuntimeApi(cbid, 1) != CUPTI_SUCCESS) {
        // This CUPTI cannot pick calls: trace them all rather than lose the flows.
        CUDASCOPE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
        runtime_fallback_ = true;
        break;
      }
    }
    // CUPTI's worker completes buffers at least this often, so the trace on disk keeps up.
    // CUDASCOPE_CUPTI_PERIODIC_FLUSH=0 leaves it to CUPTI's heuristics; the writer's flush
    // (deliver_completed, every flush interval) still delivers what is complete.
    const auto period = static_cast<std::uint32_t>(options_.flush_interval.count() > 0 ? options_.flush_interval.count() : 200);
    if (cupti_flag(&util::env_cupti_periodic_flush, "CUPTI's periodic flush kept").value_or(true)) {
      cuptiActivityFlushPeriod(period);
    }
  } catch (...) {
    // Nothing left behind: kinds enabled before the failure would cost the program their
    // records' time, every record then dropped (no live source to take it). Only once this
    // start enabled some: a failure before (another client holds CUPTI) must not switch off
    // that client's kinds.
    if (enabling_) disable_session_records();
    enabling_ = false;
    say_buffers_are_zeroed(false);
    release_live_source();
    throw;
  }
  {
    std::lock_guard lock(subscriber_mutex_);
    const bool counting = options_.kernel_sampling && options_.kernel_sampling->plan().count_launches;
    launch_callbacks_.counter = counting ? options_.kernel_sampling.get() : nullptr;
    subscribe_launch_callbacks(nccl_in_process());
    launch_callbacks_ready_ = true;
  }
  if (options_.kernel_sampling) {
    std::lock_guard lock(kernel_mutex_);
    started_ = true;
    if (options_.kernel_sampling->recording_kernels()) switch_sampled_kinds(true);
    return;
  }
  started_ = true;
}

void CuptiSource::set_kernel_records(bool on) noexcept {
  std::lock_guard lock(kernel_mutex_);
  if (started_.load() && on != kernel_records_on_) switch_sampled_kinds(on);
}

// Under kernel_mutex_. CUPTI's answers are not acted on: a kind it refuses to switch stays as
// it was until the sampler's next switch, and the window's records are what CUPTI gave.
// A window a trace asked for (full_requested) switches every work kind, a sampled one those
// metrics read; off switches what on did.
void CuptiSource::switch_sampled_kinds(bool on) noexcept {
  if (on) window_kinds_ = options_.kernel_sampling->full_requested() ? &trace_window_kinds_ : &sampled_window_kinds_;
  for (CUpti_ActivityKind kind : *window_kinds_) {
    if (on) cuptiActivityEnable(kind);
    else cuptiActivityDisable(kind);
  }
  for (CUpti_CallbackId cbid : picked_runtime_callbacks(options_.activities)) cuptiActivityEnableRuntimeApi(cbid, on ? 1 : 0);
  kernel_records_on_ = on;
}

void CuptiSource::nccl_called() noexcept {
  if (CuptiSource* source = live_.load()) source->subscribe_for_nccl();
}

void CuptiSource::subscribe_for_nccl() noexcept {
  std::lock_guard lock(subscriber_mutex_);
  if (launch_callbacks_ready_) subscribe_launch_callbacks(true);
}

// Under subscriber_mutex_. Subscribes once, for what is asked by now: launch counting (set by
// start) and, once NCCL has made a call, NCCL's launches (enabled on the subscription then).
void CuptiSource::subscribe_launch_callbacks(bool nccl_has_called) noexcept {
  const bool counting = launch_callbacks_.counter != nullptr;
  const bool nccl = nccl_has_called && records_nccl_launches(options_.activities);
  if (!counting && !nccl) return;
  if (launch_subscriber_ == nullptr && !open_launch_subscription(counting, nccl)) return;
  if (nccl && !launch_callbacks_.nccl_launches.load()) {
    const auto subscriber = static_cast<CUpti_SubscriberHandle>(launch_subscriber_);
    for (CUpti_CallbackId cbid : kDriverLaunches) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    launch_callbacks_.nccl_launches.store(true);
  }
}

// Under subscriber_mutex_. False, and says what is lost, when another subscriber holds CUPTI's.
bool CuptiSource::open_launch_subscription(bool counting, bool nccl) noexcept {
  CUpti_SubscriberHandle subscriber = nullptr;
  const CUptiResult status =
      cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_launch_call), &launch_callbacks_);
  if (status != CUPTI_SUCCESS) {
    const char* text = nullptr;
    cuptiGetResultString(status, &text);
    const char* lost = !nccl       ? "no exact launch counts"
                       : !counting ? "NCCL kernels not tied to their communicators"
                                   : "no exact launch counts, and NCCL kernels not tied to their communicators";
    std::fprintf(stderr, "cudascope: %s: cuptiSubscribe failed: %s (another CUPTI subscriber, e.g. torch.profiler, may "
                         "hold the one CUPTI allows)\n", lost, text != nullptr ? text : "unknown");
    return false;
  }
  launch_subscriber_ = subscriber;
  launch_subscriptions.fetch_add(1, std::memory_order_relaxed);
  if (counting) {
    for (CUpti_CallbackId cbid : kRuntimeLaunches) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    for (CUpti_CallbackId cbid : kDriverLaunches) cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    launch_callbacks_.counter->set_counting_launches(true);
  }
  return true;
}

void CuptiSource::unsubscribe_launch_callbacks() noexcept {
  std::lock_guard lock(subscriber_mutex_);
  launch_callbacks_ready_ = false;
  if (launch_subscriber_ != nullptr) cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(launch_subscriber_));
  launch_subscriber_ = nullptr;
  launch_callbacks_.nccl_launches.store(false);
}

void CuptiSource::stop() {
  if (!started_) return;
  started_ = false;
  // However the calls below end: a later client (torch.profiler) hands CUPTI buffers of its own.
  struct ZeroedBuffersNoMore {
    ~ZeroedBuffersNoMore() { say_buffers_are_zeroed(false); }
  } zeroed_buffers_no_more;
  unsubscribe_launch_callbacks();
  {
    std::lock_guard lock(kernel_mutex_);
    if (kernel_records_on_) switch_sampled_kinds(false);
  }
  // Every step below runs even when the flush fails: CUPTI must not be left calling a source
  // that is about to be destroyed.
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disable_session_records();
  enabling_ = false;
  release_live_source();
  if (flushed != CUPTI_SUCCESS) {
    throw_cupti_error(flushed, "cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)", __FILE__, __LINE__);
  }
}

// What start() enabled for the session, off again, and CUPTI's periodic flush with it.
// Disabling a kind that was not enabled does nothing, so this also undoes a start that failed
// part way.
void CuptiSource::disable_session_records() noexcept {
  for (CUpti_ActivityKind kind : session_kinds(options_.activities, options_.kernel_sampling != nullptr)) cuptiActivityDisable(kind);
  if (!options_.kernel_sampling) {
    for (CUpti_CallbackId cbid : picked_runtime_callbacks(options_.activities)) cuptiActivityEnableRuntimeApi(cbid, 0);
  }
  if (runtime_fallback_) cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  runtime_fallback_ = false;
  cuptiActivityFlushPeriod(0);
}

// No buffer callback reaches this source once this returns: callbacks that found it live
// before it was released have finished (CUPTI's worker may be in one; the source may be
// destroyed next). A callback decodes one buffer, milliseconds; the wait is bounded all the
// same, for a child forked while another thread was in one, whose count nothing brings down.
void CuptiSource::release_live_source() noexcept {
  live_.store(nullptr);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (callbacks_in_flight_.load() != 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
}

std::size_t CuptiSource::buffer_bytes() const noexcept {
  return (options_.cupti_buffer_bytes + kAlignment - 1) / kAlignment * kAlignment;
}

void CuptiSource::deliver_completed() noexcept {
  if (started_.load(std::memory_order_acquire)) cuptiActivityFlushAll(0);  // a failure: the next flush tries again
}

void CuptiSource::on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  const std::size_t bytes = buffer_bytes();
  *max_records = 0;  // as many as fit
  {
    std::lock_guard lock(pool_mutex_);
    if (!free_buffers_.empty()) {
      *buffer = free_buffers_.back();
      free_buffers_.pop_back();
      *size = bytes;
      return;
    }
  }
  *buffer = new_buffer(bytes);
  *size = *buffer == nullptr ? 0 : bytes;
}

void CuptiSource::on_buffer_completed(void* context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                      std::size_t valid_bytes) {
  if (buffer == nullptr) return;
  if (!discard_) {
    std::lock_guard lock(decode_mutex_);
    const std::uint64_t incomplete = decoder_.incomplete();
    decoder_.decode(buffer, valid_bytes, [](const Record* records, std::size_t count) {
      RecordBuffers& buffers = RecordBuffers::process();
      for (std::size_t i = 0; i < count; ++i) buffers.emit(records[i]);
    });
    // Records of work CUPTI could not time (still running at a forced flush) are lost as
    // surely as those it dropped.
    dropped_.fetch_add(decoder_.incomplete() - incomplete, std::memory_order_relaxed);
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(static_cast<CUcontext>(context), stream_id, &dropped) == CUPTI_SUCCESS) {
    dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
  // Zeros again, on the thread that completes it (CUPTI's worker, or a flush's caller)
  // rather than on the launching thread that asks next (say_buffers_are_zeroed). All of it:
  // nothing says CUPTI writes only the valid bytes. (A buffer the full pool then frees was
  // zeroed for nothing; the pool is full only after a burst of requests found it empty.)
  // A buffer of another size (handed out by an earlier session with other options, completed
  // only now) would be handed out again as this session's size: freed instead.
  if (size == buffer_bytes()) {
    std::memset(buffer, 0, size);
    std::lock_guard lock(pool_mutex_);
    if (free_buffers_.size() < kPooledBuffers) {
      free_buffers_.push_back(buffer);
      return;
    }
  }
  std::free(buffer);
}

// Counts a buffer callback in flight for as long as it may use the source it finds live.
struct CuptiSource::InFlight {
  InFlight() noexcept { callbacks_in_flight_.fetch_add(1); }
  ~InFlight() { callbacks_in_flight_.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};

void CuptiSource::requested_trampoline(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  const InFlight in_flight;
  CuptiSource* source = live_.load();
  if (source == nullptr) {
    *buffer = nullptr;
    *size = 0;
    *max_records = 0;
    return;
  }
  source->on_buffer_requested(buffer, size, max_records);
}

void CuptiSource::completed_trampoline(void* context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                       std::size_t valid_bytes) {
  const InFlight in_flight;
  CuptiSource* source = live_.load();
  if (source == nullptr) {
    std::free(buffer);
    return;
  }
  source->on_buffer_completed(context, stream_id, buffer, size, valid_bytes);
}

std::unique_ptr<DeviceSource> make_cupti_source(const SessionOptions& options) {
  return std::make_unique<CuptiSource>(options);
}

void on_nccl_in_process() noexcept { CuptiSource::nccl_called(); }

}  // namespace cudascope::profiler::detail

namespace cudascope::profiler {

void push_external_correlation_id(std::uint64_t id) noexcept {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void pop_external_correlation_id() noexcept {
  std::uint64_t id = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id);
}

}  // namespace cudascope::profiler
