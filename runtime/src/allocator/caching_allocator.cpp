// The process-wide allocator behind memory.h: one DeviceAllocator per device (or the
// allocator change_current_allocator / backend:cudaMallocAsync chose), the configuration,
// and the torch.cuda memory_* functions.
#include "device_allocator.h"
#include "raw_allocator.h"
#include "caching_allocator.h"

#include "../check.h"
#include "../runtime_state.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/util/env_value.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

namespace cudascope::cuda {
namespace detail::alloc {
namespace {

std::atomic<const AllocatorConfig*> current_config{nullptr};
std::mutex config_mutex;
// Every configuration ever in force: readers may still hold an older one, so none is freed
// (they stay reachable here, which also keeps leak checkers quiet).
std::vector<std::unique_ptr<AllocatorConfig>>& all_configs() {
  static auto* configs = new std::vector<std::unique_ptr<AllocatorConfig>>();
  return *configs;
}
const AllocatorConfig* keep(AllocatorConfig config) {
  all_configs().push_back(std::make_unique<AllocatorConfig>(std::move(config)));
  return all_configs().back().get();
}

const AllocatorConfig& default_config() {
  static const AllocatorConfig* defaults = new AllocatorConfig();
  return *defaults;
}

// The configuration is read once, at first use, so a bad one is reported by the first
// allocator call (not by a static initialiser).
void ensure_config() {
  if (current_config.load(std::memory_order_acquire) != nullptr) return;
  std::lock_guard lock(config_mutex);
  if (current_config.load() == nullptr) current_config.store(keep(AllocatorConfig::from_environment()));
}

enum class Mode { kNative, kOther };

struct ProcessAllocator {
  std::vector<std::unique_ptr<DeviceAllocator>> devices;
  std::unique_ptr<RawAllocator> other;  // cudaMallocAsync or pluggable
  std::atomic<Mode> mode{Mode::kNative};
  std::atomic<bool> used{false};
  std::mutex swap_mutex;
};

// A process that asks for a snapshot at out-of-memory (CUDASCOPE_OOM_SNAPSHOT) records the
// allocator's history from its first allocation, so the snapshot shows what led there.
// CUDASCOPE_OOM_HISTORY: "events" or a true flag (the default: every alloc, free and segment
// action with its NVTX ranges, no C++ stacks; its cost: memory.h), "stacks" (and the C++
// stack of each: 1.6-1.8x), "off" or a false flag. A record_memory_history call later
// replaces it.
constexpr std::size_t kOomHistoryEntries = 100000;

enum class OomHistory { kEvents, kStacks, kOff };

// A value not understood turns history off (said on stderr when `complain`): it may be an
// opt-out spelled otherwise ("none"), and recording costs time in someone else's process.
OomHistory oom_history_setting(bool complain) {
  const char* name = "CUDASCOPE_OOM_HISTORY";
  if (util::env_text("CUDASCOPE_OOM_SNAPSHOT").value_or("").empty()) return OomHistory::kOff;
  const std::optional<std::string> text = util::env_text(name);
  if (!text || *text == "events") return OomHistory::kEvents;
  if (*text == "stacks") return OomHistory::kStacks;
  try {
    return util::parse_env_flag(name, *text) ? OomHistory::kEvents : OomHistory::kOff;
  } catch (const util::EnvError&) {
    if (complain) {
      std::fprintf(stderr, "cudascope: %s is not a history setting (events, stacks, on or off); history is off\n",
                   util::env_shown(name, *text).c_str());
    }
    return OomHistory::kOff;
  }
}

void start_oom_history(ProcessAllocator& p) {
  const OomHistory mode = oom_history_setting(true);
  if (mode == OomHistory::kOff) return;
  HistorySettings settings{true, RecordContext::kAll, mode == OomHistory::kStacks, kOomHistoryEntries};
  for (auto& d : p.devices) d->set_history(settings);
}

ProcessAllocator& process() {
  // Never destroyed: memory may be freed from static destructors at exit.
  static ProcessAllocator* const state = [] {
    ensure_config();
    auto* p = new ProcessAllocator();
    Backend& backend = lazy_backend();
    const int count = backend.device_count();
    for (int i = 0; i < count; ++i) p->devices.push_back(std::make_unique<DeviceAllocator>(i, backend));
    if (config().backend == "cudaMallocAsync") {
      p->other = make_async_allocator(backend);
      p->mode.store(Mode::kOther);
    }
    start_oom_history(*p);
    return p;
  }();
  return *state;
}

DeviceAllocator& device_allocator(int device) { return *process().devices[static_cast<std::size_t>(device)]; }

[[noreturn]] void bad_pointer(void* ptr, const std::string& why) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", ptr);
  throw_error(error_code::kInvalidValue, "caching_allocator_delete", __FILE__, __LINE__,
              std::string("pointer ") + text + " " + why + "; allocator state unchanged");
}

[[noreturn]] void explain_bad_free(void* ptr) {
  ProcessAllocator& p = process();
  for (std::size_t d = 0; d < p.devices.size(); ++d) {
    switch (p.devices[d]->classify(ptr)) {
      case PointerKind::kFreeBlock:
        bad_pointer(ptr, "is not allocated: double free (its block on device " + std::to_string(d) +
                             " is already free)");
      case PointerKind::kInsideBlock:
        bad_pointer(ptr, "points inside a block of device " + std::to_string(d) +
                             " but is not the start of an allocation");
      default: break;
    }
  }
  bad_pointer(ptr, "was not allocated by the caching allocator (foreign pointer)");
}

}  // namespace

const AllocatorConfig& config() noexcept {
  const AllocatorConfig* c = current_config.load(std::memory_order_acquire);
  return c != nullptr ? *c : default_config();
}

void set_config(const AllocatorConfig& next) {
  ensure_config();
  std::lock_guard lock(config_mutex);
  current_config.store(keep(next), std::memory_order_release);
}

namespace {
DeviceAllocator& native_for_graphs(int device, const char* call) {
  ProcessAllocator& p = process();
  CUDASCOPE_CHECK(p.mode.load() == Mode::kNative, error_code::kNotSupported, call,
                  std::string("CUDA graph capture needs the native caching allocator; the allocator in use is ") +
                      (config().backend == "cudaMallocAsync" ? "cudaMallocAsync" : "a pluggable allocator"));
  return device_allocator(device);
}
}  // namespace

void begin_allocate_to_pool(int device, PoolId id, CaptureStreamFilter filter) {
  native_for_graphs(device, "beginAllocateToPool").begin_allocate_to_pool(id, std::move(filter));
}
void end_allocate_to_pool(int device, PoolId id) {
  native_for_graphs(device, "endAllocateToPool").end_allocate_to_pool(id);
}
void release_pool(int device, PoolId id) { native_for_graphs(device, "releasePool").release_pool(id); }
int pool_use_count(int device, PoolId id) { return native_for_graphs(device, "getPoolUseCount").pool_use_count(id); }

std::size_t live_allocations(int device) { return device_allocator(resolve_device(device)).live_allocations(); }

std::string check_invariants(int device) { return device_allocator(resolve_device(device)).check_invariants(); }

void clear_memory_limit(int device) { device_allocator(resolve_device(device)).clear_memory_limit(); }

std::size_t set_recorded_addresses(int device, std::vector<std::uintptr_t> addresses) {
  return device_allocator(resolve_device(device)).set_recorded_addresses(std::move(addresses));
}

void set_history(const HistorySettings& settings) {
  for (auto& d : process().devices) d->set_history(settings);
}

std::size_t largest_free_block(int device) { return device_allocator(resolve_device(device)).largest_free_block(); }

Usage usage(int device) {
  const DeviceStats s = device_allocator(resolve_device(device)).stats();
  return {s.reserved_bytes[0].current, s.allocated_bytes[0].current, s.active_bytes[0].current};
}

void snapshot_devices(memory::Snapshot& out) {
  Symbolizer symbolizer;
  timespec real{}, mono{};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  const std::int64_t offset = (static_cast<std::int64_t>(real.tv_sec) - mono.tv_sec) * 1000000000LL +
                              (static_cast<std::int64_t>(real.tv_nsec) - mono.tv_nsec);
  for (auto& d : process().devices) {
    out.device_traces.emplace_back();
    d->snapshot(out.segments, out.device_traces.back(), symbolizer, offset);
  }
}

std::pair<void*, std::size_t> base_allocation(void* ptr, int device) {
  ProcessAllocator& p = process();
  CUDASCOPE_CHECK(p.mode.load() == Mode::kNative, error_code::kNotSupported, "getBaseAllocation",
                  "memory from the " + (p.other ? p.other->name() : std::string("current")) +
                      " allocator cannot be shared between processes; use the native caching allocator");
  const auto base = device_allocator(resolve_device(device)).base_allocation(ptr);
  if (base.first == nullptr) bad_pointer(ptr, "is not a live allocation of device " + std::to_string(device));
  return base;
}

}  // namespace detail::alloc

using namespace detail::alloc;

void* caching_allocator_alloc(std::size_t size, int device, std::optional<Stream> stream) {
  const int index = detail::resolve_device(device);
  if (size == 0) return nullptr;
  ProcessAllocator& p = process();
  p.used.store(true, std::memory_order_relaxed);
  detail::CurrentStreamOf s{};
  if (stream) {
    CUDASCOPE_CHECK(stream->device_index() == index, error_code::kInvalidValue, "caching_allocator_alloc",
                    "stream belongs to device " + std::to_string(stream->device_index()) +
                        ", allocation asked for device " + std::to_string(index));
    s = {stream->handle(), stream->id()};
  } else {
    s = detail::current_stream_of(index);  // the current stream is always on `index`
  }
  if (p.mode.load(std::memory_order_relaxed) == Mode::kOther) {
    return p.other->alloc(size, index, s.handle);
  }
  try {
    return device_allocator(index).malloc(size, s.handle, s.id);
  } catch (const OutOfMemoryError&) {
    if (const std::string path = util::env_text("CUDASCOPE_OOM_SNAPSHOT").value_or(""); !path.empty()) {
      try {
        memory::dump_snapshot(path);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cudascope: CUDASCOPE_OOM_SNAPSHOT=%s could not be written: %s\n", path.c_str(), e.what());
      }
    }
    throw;
  }
}

void caching_allocator_delete(void* ptr) {
  if (ptr == nullptr) return;
  ProcessAllocator& p = process();
  if (p.mode.load(std::memory_order_relaxed) == Mode::kOther) {
    if (!p.other->free(ptr)) bad_pointer(ptr, "was not allocated by the " + p.other->name() + " allocator");
    return;
  }
  // The current device first: most frees happen where the memory was allocated.
  const int first = detail::thread_device();
  if (first >= 0 && static_cast<std::size_t>(first) < p.devices.size() && p.devices[first]->free(ptr)) return;
  for (std::size_t d = 0; d < p.devices.size(); ++d) {
    if (static_cast<int>(d) != first && p.devices[d]->free(ptr)) return;
  }
  explain_bad_free(ptr);
}

void caching_allocator_delete(void* ptr, int device) {
  if (ptr == nullptr) return;
  const int index = detail::resolve_device(device);
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return caching_allocator_delete(ptr);
  if (p.devices[static_cast<std::size_t>(index)]->free(ptr)) return;
  for (std::size_t d = 0; d < p.devices.size(); ++d) {
    if (p.devices[d]->owns_allocation(ptr)) {
      bad_pointer(ptr, "belongs to device " + std::to_string(d) + ", not to device " + std::to_string(index) +
                           " (free on the wrong device)");
    }
  }
  explain_bad_free(ptr);
}

void record_stream(void* ptr, const Stream& stream) {
  if (ptr == nullptr) return;
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return;  // stream-ordered or foreign: nothing to do
  const StreamUse use{stream.handle(), stream.id(), stream.device_index()};
  for (auto& d : p.devices) {
    if (d->record_stream(ptr, use)) return;
  }
  explain_bad_free(ptr);
}

void empty_cache() {
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return p.other->empty_cache();
  for (auto& d : p.devices) d->empty_cache();
}

void set_per_process_memory_fraction(double fraction, int device) {
  const int index = detail::resolve_device(device);
  CUDASCOPE_CHECK(fraction >= 0.0 && fraction <= 1.0, error_code::kInvalidValue, "set_per_process_memory_fraction",
                  "fraction " + std::to_string(fraction) + " is not within [0, 1]");
  const std::size_t total = mem_get_info(index).second;
  device_allocator(index).set_memory_limit(static_cast<std::size_t>(fraction * static_cast<double>(total)));
}

void set_per_process_memory_limit(std::size_t bytes, int device) {
  device_allocator(detail::resolve_device(device)).set_memory_limit(bytes);
}

double get_per_process_memory_fraction(int device) {
  const int index = detail::resolve_device(device);
  DeviceAllocator& d = device_allocator(index);
  if (!d.has_memory_limit()) return 1.0;
  return static_cast<double>(d.memory_limit()) / static_cast<double>(mem_get_info(index).second);
}

std::map<std::string, std::int64_t> memory_stats(int device) {
  const int index = detail::resolve_device(device);
  ProcessAllocator& p = process();
  const std::size_t max_split = config().max_split_size;
  const std::int64_t max_split_value = max_split == SIZE_MAX ? -1 : static_cast<std::int64_t>(max_split);
  if (p.mode.load() == Mode::kOther) return to_stats_map(p.other->stats(index), max_split_value);
  return to_stats_map(device_allocator(index).stats(), max_split_value);
}

std::map<std::int64_t, std::map<std::string, std::int64_t>> memory_stats_per_stream(int device) {
  std::map<std::int64_t, std::map<std::string, std::int64_t>> out;
  for (const auto& [id, s] : device_allocator(detail::resolve_device(device)).stream_stats()) out[id] = to_stats_map(s);
  return out;
}

AllocatorStats allocator_stats(int device) {
  const int index = detail::resolve_device(device);
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return to_public(p.other->stats(index));
  DeviceAllocator& d = device_allocator(index);
  AllocatorStats out = to_public(d.stats());
  out.largest_free_block = static_cast<std::int64_t>(d.largest_free_block());
  return out;
}

std::map<std::int64_t, StreamAllocatorStats> allocator_stats_per_stream(int device) {
  std::map<std::int64_t, StreamAllocatorStats> out;
  for (const auto& [id, s] : device_allocator(detail::resolve_device(device)).stream_stats()) out[id] = to_public(s);
  return out;
}

std::string memory_summary(int device, bool abbreviated) {
  const int index = detail::resolve_device(device);
  return format_memory_summary(memory_stats(index), index, abbreviated);
}

namespace {
std::int64_t stat(int device, const char* key) { return memory_stats(device).at(key); }
}  // namespace

std::int64_t memory_allocated(int device) { return stat(device, "allocated_bytes.all.current"); }
std::int64_t max_memory_allocated(int device) { return stat(device, "allocated_bytes.all.peak"); }
std::int64_t memory_reserved(int device) { return stat(device, "reserved_bytes.all.current"); }
std::int64_t max_memory_reserved(int device) { return stat(device, "reserved_bytes.all.peak"); }
std::int64_t memory_cached(int device) { return memory_reserved(device); }
std::int64_t max_memory_cached(int device) { return max_memory_reserved(device); }

void reset_peak_memory_stats(int device) {
  const int index = detail::resolve_device(device);
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return p.other->reset_peak(index);
  device_allocator(index).reset_peak();
}
void reset_max_memory_allocated(int device) { reset_peak_memory_stats(device); }
void reset_max_memory_cached(int device) { reset_peak_memory_stats(device); }

void reset_accumulated_memory_stats(int device) {
  const int index = detail::resolve_device(device);
  ProcessAllocator& p = process();
  if (p.mode.load() == Mode::kOther) return p.other->reset_accumulated(index);
  device_allocator(index).reset_accumulated();
}

std::string get_allocator_backend() {
  ProcessAllocator& p = process();
  return p.mode.load() == Mode::kOther ? p.other->name() : "native";
}

void change_current_allocator(const CUDAPluggableAllocator& allocator) {
  ProcessAllocator& p = process();
  std::lock_guard lock(p.swap_mutex);
  CUDASCOPE_CHECK(!p.used.load(), error_code::kInvalidValue, "change_current_allocator",
                  "the current allocator (" + get_allocator_backend() +
                      ") has already allocated memory; change the allocator before the first allocation");
  p.other = make_pluggable_allocator(allocator.alloc_fn(), allocator.free_fn());
  p.mode.store(Mode::kOther);
}

namespace memory {

void set_allocator_settings(const std::string& settings) {
  set_config(AllocatorConfig::parse(settings, "set_allocator_settings"));
}

AllocatorConfig allocator_settings() {
  ensure_config();
  return config();
}

bool history_on_by_default() { return oom_history_setting(false) != OomHistory::kOff; }

void record_memory_history(std::optional<std::string> enabled, std::optional<std::string> context,
                           const std::string& stacks, std::size_t max_entries) {
  HistorySettings settings;
  auto bad = [](const std::string& what, const std::string& value, const char* valid) {
    detail::throw_error(error_code::kInvalidValue, "record_memory_history", __FILE__, __LINE__,
                        what + "='" + value + "' is not valid; valid: " + valid);
  };
  if (enabled && *enabled != "state" && *enabled != "all") bad("enabled", *enabled, "state, all, or none");
  if (context && *context != "state" && *context != "alloc" && *context != "all") {
    bad("context", *context, "state, alloc, all, or none");
  }
  if (stacks != "python" && stacks != "cpp" && stacks != "all") bad("stacks", stacks, "python, cpp, all");
  if (enabled) {
    settings.record_trace = *enabled == "all";
    if (context) {
      settings.when = *context == "all"     ? RecordContext::kAll
                      : *context == "alloc" ? RecordContext::kAlloc
                                            : RecordContext::kState;
    }
    settings.cpp_stacks = stacks != "python";
    settings.max_entries = max_entries;
  }
  set_history(settings);
}

Snapshot memory_snapshot() {
  Snapshot out;
  snapshot_devices(out);
  const AllocatorConfig& c = config();
  AllocatorSettings& s = out.allocator_settings;
  s.alloc_conf = c.text;
  s.max_split_size = c.max_split_size == SIZE_MAX ? -1 : static_cast<std::int64_t>(c.max_split_size);
  s.garbage_collection_threshold = c.garbage_collection_threshold;
  s.expandable_segments = c.expandable_segments;
  s.pinned_num_register_threads = static_cast<std::int64_t>(c.pinned_num_register_threads);
  s.release_lock_on_cudamalloc = c.release_lock_on_cudamalloc;
  s.pinned_use_cuda_host_register = c.pinned_use_cuda_host_register;
  s.graph_capture_record_stream_reuse = c.graph_capture_record_stream_reuse;
  for (std::size_t i = 0; i < AllocatorConfig::kRoundupIntervals; ++i) {
    s.roundup_power2_divisions[std::int64_t{1} << i] = static_cast<std::int64_t>(c.roundup_power2_divisions[i]);
  }
  return out;
}


void begin_allocate_to_pool(int device, PoolId pool, std::function<bool(void* stream)> stream_filter) {
  detail::alloc::begin_allocate_to_pool(detail::resolve_device(device), pool, std::move(stream_filter));
}
void end_allocate_to_pool(int device, PoolId pool) {
  detail::alloc::end_allocate_to_pool(detail::resolve_device(device), pool);
}
void release_pool(int device, PoolId pool) { detail::alloc::release_pool(detail::resolve_device(device), pool); }

}  // namespace memory
}  // namespace cudascope::cuda
