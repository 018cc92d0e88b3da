#pragma once
// The activity model: one fixed-size Record per thing that happened (a kernel, a copy, an
// API call, an NVTX range boundary, an allocator action, ...). Sources (the sim backend's
// observer, CUPTI, NVTX injection) write Records into per-thread buffers on the hot path;
// formatting, demangling and I/O happen later on the writer thread (see TraceSink).
//
// A Record holds pointers only to strings that live for the whole process (CUPTI's kernel
// names, string literals, interned strings); NVTX messages, which the caller owns, are
// copied inline (and into following kText records when longer than fits in one).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace cudascope::profiler {

enum class RecordKind : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kRuntimeApi,
  kDriverApi,
  kNvtxPush,        // thread-local range start; text follows
  kNvtxPop,
  kNvtxMark,
  kNvtxRangeStart,  // process-wide range (nvtxRangeStart): stream holds the range id
  kNvtxRangeEnd,
  kAllocator,
  kOverhead,
  kDevice,          // metadata: a device's name and properties
  kContext,
  kStream,
  kExternalCorrelation,
  kThreadName,      // metadata: NVTX-named OS thread
  kDropped,         // records lost so far (detail: DropSource), reported in the trace
  kText,            // continuation of the previous record's text
  kDeviceMemory,    // device memory obtained or returned (cudaMalloc/cudaFree; CUPTI memory records)
  kEventTiming,     // Event::elapsed_time's span on the start event's stream
};

enum class CopyKindCode : std::uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP, kHtoA, kAtoH, kAtoA, kAtoD, kDtoA };
enum class SyncType : std::uint8_t { kUnknown, kEvent, kStreamWaitEvent, kStream, kContext, kDevice };
enum class AllocatorAction : std::uint8_t { kAlloc, kFree, kSegmentAlloc, kSegmentFree, kSegmentMap, kSegmentUnmap, kOom };
enum class DropSource : std::uint8_t { kRecordBuffers, kCupti };
enum class NvtxPayloadKind : std::uint8_t { kNone, kUint64, kInt64, kDouble, kUint32, kInt32, kFloat };

struct KernelPayload {
  const char* name;  // mangled or demangled; the writer demangles
  std::int32_t grid[3];
  std::int32_t block[3];
  std::int32_t registers_per_thread;
  std::int32_t static_shared_memory;
  std::int32_t dynamic_shared_memory;
  std::uint32_t graph_id;  // the CUDA graph that launched it; 0: launched on its own
};

struct CopyPayload {
  std::uint64_t bytes;
  std::int32_t src_device;  // -1: host
  std::int32_t dst_device;
};

struct MemsetPayload {
  std::uint64_t bytes;
  std::uint32_t value;
};

struct ApiPayload {
  const char* name;  // the function's name without version suffix
  std::uint32_t callback_id;
  std::int32_t return_value;
  std::uint32_t process_id;  // 0: this process
};

struct NvtxPayload {
  static constexpr std::size_t kInlineText = 36;
  std::uint32_t color;  // ARGB, valid when has_color
  std::uint32_t category;
  std::uint64_t payload;  // bits of the value, per payload_kind
  NvtxPayloadKind payload_kind;
  std::uint8_t has_color;
  std::uint8_t continuation_records;  // kText records that follow with the rest of the text
  std::uint8_t truncated;
  char text[kInlineText];  // not NUL-terminated when full; size in Record::text_size
};

struct TextPayload {
  static constexpr std::size_t kSize = 56;
  char text[kSize];
};

struct AllocatorPayload {
  std::uint64_t address;
  std::uint64_t size;
  std::int64_t allocated_bytes;
  std::int64_t reserved_bytes;
  std::uint64_t graph_pool[2];  // a CUDA graph's private pool; {0, 0}: the device's own
};

struct OverheadPayload {
  std::uint64_t object_id;
  const char* name;
};

struct DevicePayload {
  const char* name;  // interned
  std::uint64_t total_memory;
  std::int32_t major;
  std::int32_t minor;
  std::int32_t multiprocessors;
  std::int32_t is_sim;
};

struct StreamPayload {
  std::uint32_t context_id;
  std::int32_t priority;
  std::uint32_t flags;
};

struct ExternalCorrelationPayload {
  std::uint64_t external_id;
  std::uint32_t external_kind;
};

struct ThreadNamePayload {
  const char* name;  // interned
};

// detail: 0 allocation, 1 release. held_bytes: what the process holds on the device after it.
struct DeviceMemoryPayload {
  std::uint64_t address;
  std::uint64_t bytes;
  std::uint64_t held_bytes;
};

// The start event's name (interned; nullptr: unnamed).
struct EventTimingPayload {
  const char* name;
};

struct DroppedPayload {
  std::uint64_t total;  // all records lost from this source so far
};

struct Record {
  RecordKind kind;
  std::uint8_t detail;      // CopyKindCode, SyncType, AllocatorAction, overhead kind, DropSource
  std::uint16_t text_size;  // NVTX text length in bytes (inline + continuation)
  std::int32_t device;      // -1: not on a device
  std::uint32_t thread_id;  // OS thread of host-side records
  std::uint32_t correlation_id;
  std::int64_t stream;      // stream id; NVTX push/pop/mark: the domain (0: default; else its
                            // interned name's address); kNvtxRangeStart/End: the range id
  std::uint64_t start_ns;   // host_time_ns clock; instants use start only
  std::uint64_t end_ns;
  union {
    KernelPayload kernel;
    CopyPayload copy;
    MemsetPayload memset;
    ApiPayload api;
    NvtxPayload nvtx;
    TextPayload text;
    AllocatorPayload allocator;
    OverheadPayload overhead;
    DevicePayload device_info;
    StreamPayload stream_info;
    ExternalCorrelationPayload external;
    ThreadNamePayload thread_name;
    DroppedPayload dropped;
    DeviceMemoryPayload device_memory;
    EventTimingPayload event_timing;
  } u;
};
static_assert(sizeof(Record) == 96, "records are fixed-size; keep the payloads within 56 bytes");

// Tracks what a process holds on each device from its allocation and release records, and
// makes the kDeviceMemory record for one of them. Not thread-safe: one per source, used
// under that source's lock.
class DeviceMemoryTally {
 public:
  Record record(int device, std::uint64_t address, std::uint64_t bytes, bool release, std::uint64_t time_ns);

 private:
  static constexpr int kDevices = 64;
  std::uint64_t held_[kDevices] = {};
};

// An empty record of `kind` (device -1), for sources to fill.
inline Record make_record(RecordKind kind) noexcept {
  Record r;
  std::memset(static_cast<void*>(&r), 0, sizeof r);
  r.kind = kind;
  r.device = -1;
  return r;
}

// A record of work a device did on a stream (kernel, copy, fill): joined to its launch call
// by the correlation id, with no host thread of its own.
inline Record make_device_record(RecordKind kind, std::int32_t device, std::int64_t stream, std::uint64_t start_ns,
                                 std::uint64_t end_ns, std::uint32_t correlation_id) noexcept {
  Record r = make_record(kind);
  r.device = device;
  r.stream = stream;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.correlation_id = correlation_id;
  r.thread_id = ~0u;
  return r;
}

// The text a NVTX record carries, joined with its continuation records (`next` points at
// the first record after `r`, `available` records of which may be read).
std::string record_text(const Record& r, const Record* next, std::size_t available);

const char* to_string(RecordKind kind) noexcept;
const char* to_string(CopyKindCode kind) noexcept;
const char* to_string(SyncType type) noexcept;
const char* to_string(AllocatorAction action) noexcept;

}  // namespace cudascope::profiler
