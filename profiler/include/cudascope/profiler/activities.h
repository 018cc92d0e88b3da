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
  kRuntime,   // every CUDA runtime API call ("full API tracing")
  kDriver,    // every CUDA driver API call
  kNvtx,
  kAllocator,
  kOverhead,
  kLaunch,    // only the runtime calls that put work on a stream or wait for it (launches,
              // copies, fills, synchronize): enough for launch -> kernel flows, at a
              // fraction of full API tracing's cost
  kCount
};

class ActivitySet {
 public:
  constexpr ActivitySet() = default;

  // What a session records unless told otherwise: device activity, the launch-type runtime
  // calls (for launch -> kernel flows, and the host's waits as spans of its synchronize
  // calls), NVTX, allocator events and CUPTI overhead. Full runtime and driver API tracing
  // are off by default: on a launch-bound loop they add records and CUPTI callbacks for every
  // call. So are CUPTI's synchronisation records, as torch.profiler leaves them out of its
  // CUDA activity unless asked: merely enabled they cost a launch-bound PyTorch loop 1.2-1.4x;
  // with them a default trace cost it as much as torch.profiler's CUDA activity or more, without
  // them 0.82-0.89x of it (bench/results/overhead.md). `--activities default,sync` brings them
  // back.
  static ActivitySet defaults();
  // What a metrics-only recording (`run --metrics ADDR --no-trace`) records unless told
  // otherwise: the defaults without the launch calls (only a trace's flows and
  // --metrics-label-nvtx read them).
  static ActivitySet metrics_only_defaults();
  static ActivitySet all();
  // Parses a comma-separated list of names (kernel, memcpy, memset, sync, runtime, driver,
  // nvtx, allocator, overhead, launch, all, default). "default" stands for `defaults`, the
  // recording mode's (metrics_only_defaults() for metrics without a trace: "default,sync" is
  // that set and synchronisations). Throws std::invalid_argument naming the offending entry
  // and the valid names.
  static ActivitySet parse(std::string_view list, const ActivitySet& defaults = ActivitySet::defaults());

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
