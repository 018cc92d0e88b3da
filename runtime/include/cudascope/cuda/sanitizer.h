#pragma once
// The stream sanitizer (torch.cuda._sanitizer, "CSAN"): finds unsynchronised accesses to the
// same tensor from different streams.
//
// While enabled, every Tensor kernel of the runtime (fill_, add, sum, copy_ and the copies of
// cat/contiguous/to, rand, randn, matmul) declares which CUDA tensors it reads and writes on
// which stream, and the synchronisation the program does is recorded as vector clocks, as
// CSAN's: each stream keeps, per stream, the last kernel it is known to run after. Event
// record copies the recording stream's clock into the event; Stream::wait_event (and
// Event::wait, Stream::wait_stream) merges the event's clock into the waiting stream's;
// Stream/Event synchronize and device synchronize order every stream after what the host
// waited for. A kernel that writes a tensor whose last write or reads since then came from
// another stream not ordered before it (or reads one whose last write did) is a possible
// data race and is reported.
//
// Memory: as CSAN, a tensor's history starts when its storage is allocated and ends when it is
// freed, so a block the caching allocator hands out again (stream-ordered on its stream, or
// after the events of record_stream completed) starts fresh and is never reported against its
// previous owner. Like CSAN, freeing memory is not itself checked.
//
// A report prints in CSAN's layout: the data pointer (the storage's first byte), the access
// now and the previous one (stream, kernel, reading from / writing to which arguments) with
// the C++ stack of each (the caching allocator's capture and symbolisation: frame pointers,
// names from dladdr, offsets in the object instead of lines), and the stack where the tensor
// was allocated.
//
// Cost when off: one relaxed atomic load at each hook. When on, every kernel takes a global
// lock and captures a stack (tens of nanoseconds); enable it for debugging, not production.
//
// Thread-safety: all functions may be called from any thread. Enable it before the work it
// should check: kernels queued before enable_cuda_sanitizer() are unknown to it (as CSAN,
// tensors and streams first seen later are "backfilled" with no history).

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudascope::cuda::sanitizer {

// What to do on a possible data race.
enum class OnRace : std::uint8_t {
  kPrint,  // print the report to stderr and carry on (the kernel still runs)
  kThrow,  // throw UnsynchronizedAccessError before the kernel is queued (it does not run)
};

// One access to a tensor by a kernel.
struct Access {
  enum class Type : std::uint8_t { kRead, kWrite };
  Type type = Type::kRead;
  std::uint64_t seq_num = 0;        // the kernel's number, counted from enable
  int device = 0;
  std::int64_t stream = 0;          // Stream::id() of the stream it ran on
  std::string op;                   // the kernel, e.g. "Tensor::add"
  std::vector<std::string> arguments;  // which arguments the tensor was ("self", "other")
  bool is_output = false;           // the tensor is the kernel's result
  std::string stack;                // formatted C++ stack, innermost first ("" when not captured)
};

// "reading from" / "writing to", as CSAN prints them.
const char* access_type_name(Access::Type type) noexcept;

// Two unsynchronised accesses to one tensor.
struct RaceReport {
  std::uintptr_t data_ptr = 0;
  Access current;
  Access previous;
  std::string allocation_stack;  // "" when the allocation was before enable
  // The report in CSAN's layout ("CSAN detected a possible data race on tensor with data
  // pointer ...").
  std::string message() const;
};

// Thrown under OnRace::kThrow; what() is the report's message.
class UnsynchronizedAccessError : public std::runtime_error {
 public:
  explicit UnsynchronizedAccessError(RaceReport report);
  const RaceReport& report() const noexcept { return report_; }

 private:
  RaceReport report_;
};

// torch.cuda._sanitizer.enable_cuda_sanitizer(). Starts with no history (enabling again
// forgets what was recorded). Also enabled, in print mode, when the runtime loads with
// CUDASCOPE_CUDA_SANITIZER set to anything but "0" (torch's TORCH_CUDA_SANITIZER likewise).
void enable_cuda_sanitizer(OnRace on_race = OnRace::kPrint);
// Stops checking and forgets all history.
void disable_cuda_sanitizer();
bool is_enabled() noexcept;

// What the sanitizer holds now (for tests and for a program's own summary).
struct Stats {
  std::size_t tensors = 0;   // storages with an access history
  std::size_t streams = 0;   // streams with a clock
  std::size_t events = 0;    // recorded events with a clock
  std::uint64_t kernels = 0;     // kernels with CUDA tensor operands checked since enable
  std::uint64_t races = 0;       // races found since enable
};
Stats stats();

// The races found since enable, oldest first (at most the last 64 are kept).
std::vector<RaceReport> reports();

}  // namespace cudascope::cuda::sanitizer
