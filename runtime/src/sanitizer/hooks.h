#pragma once
// The runtime's calls into the stream sanitizer (sanitizer.h). Each hook site tests active()
// first: one relaxed load and a branch when the sanitizer is off; the out-of-line functions
// below are reached only when it is on.
//
// Streams are named by (device, Stream::id()), events by their backend handle, tensors by
// their storage's first byte.

#include <atomic>
#include <cstdint>
#include <span>

namespace cudascope::cuda::sanitizer::detail {

inline std::atomic<bool> enabled_flag{false};
inline bool active() noexcept { return enabled_flag.load(std::memory_order_relaxed); }

// One tensor argument of a kernel: its storage's first byte and the argument's name.
struct Operand {
  const void* data;
  const char* name;  // nullptr: the kernel's output
};

// A kernel about to be queued on (device, stream) reading `reads` and writing `writes`.
// Throws UnsynchronizedAccessError in throw mode (before the caller queues the kernel).
void kernel_launch(const char* op, int device, std::int64_t stream, std::span<const Operand> reads,
                   std::span<const Operand> writes);

void memory_allocated(const void* data);
void memory_freed(const void* data);

void event_recorded(const void* event, int device, std::int64_t stream);
void event_waited(const void* event, int device, std::int64_t stream);
void event_destroyed(const void* event);
void event_synchronized(const void* event);
void stream_synchronized(int device, std::int64_t stream);
void device_synchronized(int device);

}  // namespace cudascope::cuda::sanitizer::detail
