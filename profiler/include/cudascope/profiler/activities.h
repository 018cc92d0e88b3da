#pragma once
// Which kinds of activity a session records (`cudascope run --activities LIST`).

#include <cstdint>
#include <string>
#include <string_view>

namespace cudascope::profiler {

enum class Activity : std::uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kRuntime,   // every CUDA runtime API call (launch -> kernel flows need it)
  kDriver,    // every CUDA driver API call
  kNvtx,
  kAllocator,
  kOverhead,
  kCount
};

class ActivitySet {
 public:
  constexpr ActivitySet() = default;

  // What a session records unless told otherwise: device activity, runtime API calls
  // (for launch -> kernel flows), NVTX, allocator events and CUPTI overhead. Driver API
  // tracing is off by default: it roughly doubles the host records of a launch-bound loop.
  static ActivitySet defaults();
  static ActivitySet all();
  // Parses a comma-separated list of names (kernel, memcpy, memset, sync, runtime, driver,
  // nvtx, allocator, overhead, all, default). Throws std::invalid_argument naming the
  // offending entry and the valid names.
  static ActivitySet parse(std::string_view list);

  bool contains(Activity a) const noexcept { return (bits_ >> static_cast<unsigned>(a)) & 1U; }
  ActivitySet& add(Activity a) noexcept {
    bits_ |= 1U << static_cast<unsigned>(a);
    return *this;
  }
  ActivitySet& remove(Activity a) noexcept {
    bits_ &= ~(1U << static_cast<unsigned>(a));
    return *this;
  }
  bool empty() const noexcept { return bits_ == 0; }
  std::string to_string() const;  // the list parse() reads back
  bool operator==(const ActivitySet&) const = default;

 private:
  std::uint32_t bits_ = 0;
};

const char* to_string(Activity a) noexcept;

}  // namespace cudascope::profiler
