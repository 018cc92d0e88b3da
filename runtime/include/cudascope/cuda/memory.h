#pragma once
// Device memory: torch.cuda's caching allocator API (memory_stats, memory_summary,
// empty_cache, caching_allocator_alloc, ...) and torch.cuda.memory's history and
// snapshots (namespace memory).
//
// The allocator is PyTorch's algorithm with PyTorch's statistics: pools, rounding,
// best-fit per stream, splitting and merging, max_split_size, roundup_power2_divisions,
// garbage_collection_threshold, expandable_segments, record_stream, the memory fraction
// and the OOM path, configured by CUDASCOPE_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF.
//
// Thread-safety: every function here is thread-safe. `device` -1 means the current device.

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/stream.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cudascope::cuda {

// Allocates `size` bytes on `device` for use on `stream` (default: the device's current
// stream). Throws OutOfMemoryError when the device cannot provide it. Size 0 gives nullptr.
// A size too large to round to the allocator's block sizes (within 2 MiB of 2^64, such as
// a -1 taken as unsigned) throws cuda::Error with kInvalidValue, as torch raises.
void* caching_allocator_alloc(std::size_t size, int device = -1, std::optional<Stream> stream = std::nullopt);
// Returns memory from caching_allocator_alloc. nullptr is ignored. A pointer that is not
// allocated (double free, foreign pointer) throws cuda::Error and changes nothing.
void caching_allocator_delete(void* ptr);
// As above, and checks that `ptr` belongs to `device`: a free on the wrong device throws.
void caching_allocator_delete(void* ptr, int device);
// Marks `ptr` (from caching_allocator_alloc) as used on `stream`: its memory is not reused
// until the work queued on `stream` at free time has completed (Tensor.record_stream).
void record_stream(void* ptr, const Stream& stream);

// Returns every unused cached block to the device (after synchronising pending frees).
void empty_cache();
// Caps the memory the allocator may reserve on `device` at fraction * total memory.
void set_per_process_memory_fraction(double fraction, int device = -1);
double get_per_process_memory_fraction(int device = -1);

// PyTorch's 122 keys ("allocated_bytes.all.current", "num_alloc_retries", ...), same meanings.
std::map<std::string, std::int64_t> memory_stats(int device = -1);
// Beyond PyTorch: the same counters split by the stream blocks were allocated on, keyed by
// stream id (0 = default stream). Per stream: allocation, allocated_bytes, requested_bytes,
// active, active_bytes, segment, reserved_bytes (.current/.peak/.allocated/.freed).
std::map<std::int64_t, std::map<std::string, std::int64_t>> memory_stats_per_stream(int device = -1);
// memory_stats' figures as a struct, for code that reads them by field (the exporters)
// rather than by key. Each counter as PyTorch's Stat; the arrays are indexed by pool:
// [0] all, [1] small pool, [2] large pool.
struct MemoryStat {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;  // sum of increases since the last reset_accumulated_memory_stats
  std::int64_t freed = 0;      // sum of decreases since then
};
enum MemoryPool : int { kPoolAll = 0, kPoolSmall = 1, kPoolLarge = 2 };
struct AllocatorStats {
  using PerPool = MemoryStat[3];
  PerPool allocation, segment, active, inactive_split;
  PerPool allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  std::int64_t num_alloc_retries = 0, num_ooms = 0, num_sync_all_streams = 0;
  std::int64_t num_device_alloc = 0, num_device_free = 0;
  // Beyond memory_stats: the largest inactive (cached, free) block, 0 when the process's
  // allocator is not the native one. With inactive = reserved - active bytes, the external
  // fragmentation is 1 - largest_free_block / inactive (0 when nothing is inactive), the
  // definition analysis::Figures uses for snapshots.
  std::int64_t largest_free_block = 0;
};
// Per stream (as memory_stats_per_stream), aggregate over both pools.
struct StreamAllocatorStats {
  MemoryStat allocation, allocated_bytes, requested_bytes, active, active_bytes, segment, reserved_bytes;
};
AllocatorStats allocator_stats(int device = -1);
std::map<std::int64_t, StreamAllocatorStats> allocator_stats_per_stream(int device = -1);
// PyTorch's table (torch.cuda.memory_summary), from memory_stats(device).
std::string memory_summary(int device = -1, bool abbreviated = false);
// The same table for a stats map (as memory_stats returns, or read from a file).
std::string format_memory_summary(const std::map<std::string, std::int64_t>& stats, int device, bool abbreviated);

std::int64_t memory_allocated(int device = -1);
std::int64_t max_memory_allocated(int device = -1);
std::int64_t memory_reserved(int device = -1);
std::int64_t max_memory_reserved(int device = -1);
std::int64_t memory_cached(int device = -1);      // deprecated name of memory_reserved
std::int64_t max_memory_cached(int device = -1);  // deprecated name of max_memory_reserved
void reset_peak_memory_stats(int device = -1);
void reset_max_memory_allocated(int device = -1);
void reset_max_memory_cached(int device = -1);
void reset_accumulated_memory_stats(int device = -1);

// "native", "cudaMallocAsync" or "pluggable" (the allocator serving this process).
std::string get_allocator_backend();

// An allocator loaded from a shared library: alloc_fn is
//   void* alloc(size_t size, int device, void* stream)
// and free_fn is
//   void free(void* ptr, size_t size, int device, void* stream)
// (the signatures torch.cuda.memory.CUDAPluggableAllocator expects). The constructor
// loads the library and resolves both symbols, throwing cuda::Error naming the path or
// the symbol when it cannot.
class CUDAPluggableAllocator {
 public:
  CUDAPluggableAllocator(const std::string& path, const std::string& alloc_fn_name, const std::string& free_fn_name);
  const std::string& path() const noexcept { return path_; }
  void* alloc_fn() const noexcept { return alloc_fn_; }
  void* free_fn() const noexcept { return free_fn_; }

 private:
  std::string path_;
  void* alloc_fn_ = nullptr;
  void* free_fn_ = nullptr;
};

// Makes `allocator` serve every later caching_allocator_alloc/delete. Refused (cuda::Error)
// once the current allocator has allocated anything, as torch does.
void change_current_allocator(const CUDAPluggableAllocator& allocator);

namespace memory {

// torch.cuda.memory._record_memory_history. `enabled`: "state" (only what live blocks
// need) or "all" (every action in a ring buffer of `max_entries`); std::nullopt stops
// recording and clears the buffer. `context`: "state", "alloc", "all" or std::nullopt:
// which actions keep a stack. `stacks`: "python", "cpp" or "all": C++ frames are captured
// as raw addresses (a frame-pointer walk: frames of code built without frame pointers are
// missed) and symbolised when a snapshot is taken. Each entry also keeps the thread's NVTX
// range stack as user_metadata.
//
// On by default where an out-of-memory snapshot is asked for: a process started with
// CUDASCOPE_OOM_SNAPSHOT=path records from the allocator's first use as if it had called
// record_memory_history("all", "all", "python", 100000), so the snapshot written at the
// failure carries the actions that led to it (per allocator operation with no NVTX range
// open, in instructions: 1.04x in a process that never pushed a range, 1.08x in one that did;
// an operation under open ranges also records them, not measured apart; 1.13-1.18x
// wall-clock before the first of those figures; 1.09-1.13x wall-clock on the cuda backend
// of the H100 and H200 machines; see bench/results/allocator.md).
// CUDASCOPE_OOM_HISTORY=stacks records C++ stacks as well ("all", "all", "all": 1.43-1.49x
// in instructions, 1.21-1.27x wall-clock on those machines),
// CUDASCOPE_OOM_HISTORY=off (or 0, false, no) records nothing, and so does a value not
// understood, which is named on stderr; on, 1, true, yes and events keep the default. NVTX
// range stacks are kept for up to 4096 distinct ones; beyond, new stacks are recorded without
// ranges. Any call here replaces the default, record_memory_history(std::nullopt) included.
void record_memory_history(std::optional<std::string> enabled = "all", std::optional<std::string> context = "all",
                           const std::string& stacks = "all", std::size_t max_entries = SIZE_MAX);
// Whether the environment turns that default on (CUDASCOPE_OOM_SNAPSHOT set, and
// CUDASCOPE_OOM_HISTORY not off): the one rule, for tools that adjust to it (the PyTorch
// allocator borrows NVTX ranges for threads without their own). Quiet about bad values.
bool history_on_by_default();

// torch.cuda.memory._set_allocator_settings: replaces the configuration (same syntax as
// CUDASCOPE_ALLOC_CONF). Applies to later allocations.
void set_allocator_settings(const std::string& settings);
// The configuration in force.
AllocatorConfig allocator_settings();

// PyTorch's snapshot schema (torch.cuda.memory._snapshot()).
// A frame's strings live for the whole process (symbols are interned once), so frames copy
// cheaply and snapshots of 100,000 entries stay fast.
struct Frame {
  std::string_view name;
  std::string_view filename;
  int line = 0;
};

struct BlockInfo {
  std::uint64_t address = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;
  std::string state;  // "active_allocated", "active_pending_free", "inactive"
  std::vector<Frame> frames;
};

struct SegmentInfo {
  int device = 0;
  std::uint64_t address = 0;
  std::size_t total_size = 0;
  std::size_t allocated_size = 0;
  std::size_t active_size = 0;
  std::size_t requested_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // "small" or "large"
  std::pair<std::int64_t, std::int64_t> segment_pool_id{0, 0};
  bool is_expandable = false;
  std::vector<Frame> frames;
  std::vector<BlockInfo> blocks;
};

struct TraceEntry {
  // "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
  // "segment_map", "segment_unmap", "snapshot", "oom", "user_defined"
  std::string action;
  std::uint64_t addr = 0;
  std::size_t size = 0;
  std::int64_t stream = 0;
  std::int64_t time_us = 0;  // microseconds since the Unix epoch
  std::size_t device_free = 0;  // "oom" entries: free device memory (PyTorch writes it instead of addr)
  std::string compile_context = "N/A";
  std::string user_metadata;  // the NVTX range stack, outermost first, joined by ';'
  std::vector<Frame> frames;
};

struct AllocatorSettings {
  std::string alloc_conf;  // written as PYTORCH_CUDA_ALLOC_CONF
  std::int64_t max_split_size = -1;
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  std::int64_t pinned_num_register_threads = 1;
  bool release_lock_on_cudamalloc = false;
  bool pinned_use_cuda_host_register = false;
  bool graph_capture_record_stream_reuse = false;
  std::map<std::int64_t, std::int64_t> roundup_power2_divisions;  // interval (MB) -> divisions
};

struct Snapshot {
  std::vector<SegmentInfo> segments;
  std::vector<std::vector<TraceEntry>> device_traces;  // one list per device
  AllocatorSettings allocator_settings;
};

// torch.cuda.memory._snapshot(): the segments and blocks now, and the recorded history.
Snapshot memory_snapshot();
// torch.cuda.memory._dump_snapshot(path): ".json" writes JSON, ".pickle"/".pkl" a pickle
// (protocol 4) that PyTorch's tools read; a further ".gz" compresses. Throws cuda::Error
// naming the path when it cannot be written or the extension is unknown.
void dump_snapshot(const std::string& path);
// The same of a snapshot taken earlier.
void dump_snapshot(const Snapshot& snapshot, const std::string& path);
// Writers used by dump_snapshot.
std::string snapshot_to_json(const Snapshot& snapshot);
std::string snapshot_to_pickle(const Snapshot& snapshot);

// Replays an allocation sequence (cudascope replay): the first line a JSON header with
// "conf" (and optionally "memory_limit" bytes, for a memory fraction, and "streams", how many
// streams the recording process created before its first op), then one op per line:
// {"op":"alloc","id":N,"size":B,"stream":S}, {"op":"free","id":N}, {"op":"empty_cache"},
// {"op":"reset_peak"}. Stream 0 is the current stream, 1.. side streams; the header's streams
// are taken before the first op, as the recording's were (the first Stream() creates the
// device's stream pool, and on a GPU the driver takes device memory for each stream, so a pool
// created between two cudaMallocs moves the second), and a stream index past them is taken at
// its first use. Runs on the current device, which must have no live allocations; afterwards
// frees what is left, restores the configuration and resets the statistics. Returns memory_stats() as it was at the end.
// Reads line by line in bounded memory: a line over 1 MiB (input that is not a sequence,
// such as /dev/zero) throws cuda::Error naming the line, as does any malformed line.
std::map<std::string, std::int64_t> replay(std::istream& ops, const std::string& name = "replay");
// replay() of a file, gunzipped when it starts with the gzip magic (the gzip trailer is
// checked). The header line is checked before any device is used. Best-fit ties between
// equal-size blocks break by address: on the sim backend by the addresses it hands out as
// the CUDA driver would (no recorded addresses needed).
std::map<std::string, std::int64_t> replay_file(const std::string& path);
// replay_file() with the addresses another process's cudaMalloc returned (`addresses_path`:
// a JSON list, in cudaMalloc order, such as the NAME.segments.json.gz that
// tests/data/make_replay.py writes beside NAME.jsonl.gz) breaking best-fit ties instead of the
// device's own: the sim's, or on a GPU the driver's. On a GPU the memory is still the
// driver's; only the order of equal-size blocks follows the list. That tells the allocator's
// decisions from the driver's placement, which differs between processes, even between two
// PyTorch processes replaying one sequence on one machine. Throws cuda::Error when the file is
// not such a list, or when the replay did not use every address exactly once (it made more or
// fewer cudaMallocs than the recording: the addresses belong to another sequence or run).
std::map<std::string, std::int64_t> replay_file_with_addresses(const std::string& path,
                                                               const std::string& addresses_path);
// The same with the list already read by read_recorded_addresses().
std::map<std::string, std::int64_t> replay_file_with_addresses(const std::string& path,
                                                               const std::vector<std::uintptr_t>& addresses);
// Called once a replay's last op has run, while the replay still holds what the sequence left
// allocated, before it frees that: where memory_snapshot() shows the sequence's end state.
using ReplayEnd = std::function<void()>;
// replay_file(), and with `addresses` not empty replay_file_with_addresses(), calling `at_end`.
std::map<std::string, std::int64_t> replay_file(const std::string& path, const std::vector<std::uintptr_t>& addresses,
                                                const ReplayEnd& at_end);
// Reads a list of recorded addresses (a JSON list of unsigned 64-bit integers, plain or
// gzip). Throws cuda::Error naming the file and the offset of what is not such a list (a
// value past 2^64-1 included), so a caller can refuse the file before any replay starts.
std::vector<std::uintptr_t> read_recorded_addresses(const std::string& addresses_path);

// One request of an allocation sequence held in memory (replay_requests): what a recorded
// trace asked of the allocator, with the allocator's own decisions (segments) left out.
struct ReplayRequest {
  enum class Kind : std::uint8_t { alloc, free, empty_cache };
  Kind kind = Kind::alloc;
  std::uint8_t stream = 0;  // 0: the current stream; 1..64 side streams, all taken before the first request
  std::uint64_t id = 0;     // pairs a free with its alloc
  std::size_t size = 0;     // alloc: the requested bytes (before rounding)
};

// What replay_requests saw: memory_stats() at the end (peaks included) and the state right
// after the request that first reached the peak reserved bytes.
struct ReplayOutcome {
  std::map<std::string, std::int64_t> stats;
  std::size_t peak_request = 0;  // index of that request
  std::int64_t peak_reserved = 0;
  std::int64_t allocated_at_peak = 0;
  std::int64_t inactive_at_peak = 0;  // reserved - active: cached, free
  std::int64_t largest_free_block_at_peak = 0;
  std::vector<std::size_t> oom_requests;  // allocs that ran out of memory (skipped, as failed)
};

// How replay_requests runs.
struct ReplayRequestsOptions {
  std::string conf;  // PYTORCH_CUDA_ALLOC_CONF syntax; "" for the defaults
  std::optional<std::size_t> memory_limit;  // a cap on reserved bytes, as a memory fraction
  std::string name = "replay";              // names the sequence in errors
  // Called with the number of requests done, about every 64Ki requests and at the end.
  std::function<void(std::size_t)> progress;
};

// Replays `requests` as replay() does (a fresh allocator on the current device, which must
// have no live allocations; the configuration checked first), then restores the
// configuration and frees what is left. Throws cuda::Error naming options.name for a bad
// configuration.
ReplayOutcome replay_requests(const std::vector<ReplayRequest>& requests, const ReplayRequestsOptions& options);

// The caching allocator's private memory pools, as PyTorch's CUDACachingAllocator exposes them
// (beginAllocateToPool, endAllocateToPool, releasePool): CUDAGraph (graphs.h) uses them, and so
// does a host that drives capture itself (PyTorch through the pluggable allocator's hooks).
// While `pool` is begun on `device`, requests on streams for which `stream_filter` is true are
// served from it; release_pool says one user of the pool is gone (at none, empty_cache returns
// its unused segments). Ids as torch's MempoolId_t: (n, 0) or (0, n). Throw cuda::Error when
// the allocator is not the native one, or for a pool begun twice / released when unused.
using PoolId = std::pair<unsigned long long, unsigned long long>;
void begin_allocate_to_pool(int device, PoolId pool, std::function<bool(void* stream)> stream_filter);
void end_allocate_to_pool(int device, PoolId pool);
void release_pool(int device, PoolId pool);

}  // namespace memory

// Beyond torch: caps what the allocator may reserve on `device` at `bytes` (as a memory
// fraction does); replays use it to reproduce a fraction taken on another device.
void set_per_process_memory_limit(std::size_t bytes, int device = -1);

}  // namespace cudascope::cuda
