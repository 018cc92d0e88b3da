#include <cudascope/cuda/instrumentation.h>
#include <cudascope/util/env_value.h>

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace cudascope::cuda::instrumentation {

namespace {

std::uint64_t monotonic_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(now.tv_nsec);
}

#if defined(__x86_64__)
// Timestamps are taken on hot paths (every NVTX call, every CUPTI record through its
// timestamp callback), and on some virtual machines clock_gettime is a system call costing
// ~100 ns. With an invariant TSC the clock is the TSC, scaled and offset to CLOCK_MONOTONIC:
// for the first 20 ms CLOCK_MONOTONIC itself is returned while the TSC rate is measured
// against it; from then on the TSC (continuous at the switch, drift under ~10 us per second
// against CLOCK_MONOTONIC). CUDASCOPE_CLOCK=monotonic keeps clock_gettime throughout.
struct TscClock {
  enum State : int { kUnstarted, kSampling, kBusy, kReady, kUnusable };
  std::atomic<int> state{kUnstarted};
  std::uint64_t tsc0 = 0;
  std::uint64_t ns0 = 0;
  std::uint64_t base_tsc = 0;
  std::uint64_t base_ns = 0;
  double ns_per_tick = 0;
};
TscClock tsc_clock;
constexpr std::uint64_t kCalibrationNs = 20000000;

bool invariant_tsc() {
  try {
    if (util::env_clock().value_or("tsc") == "monotonic") return false;
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; using the default clock\n", e.what());
  }
  std::FILE* cpuinfo = std::fopen("/proc/cpuinfo", "r");
  if (cpuinfo == nullptr) return false;
  char line[8192];
  bool found = false;
  while (std::fgets(line, sizeof line, cpuinfo) != nullptr) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    found = std::strstr(line, " constant_tsc") != nullptr && std::strstr(line, " nonstop_tsc") != nullptr;
    break;
  }
  std::fclose(cpuinfo);
  return found;
}

// A (tsc, ns) pair read as close together as possible.
void sample(std::uint64_t& tsc, std::uint64_t& ns) noexcept {
  const std::uint64_t before = __rdtsc();
  ns = monotonic_ns();
  const std::uint64_t after = __rdtsc();
  tsc = before + (after - before) / 2;
}
#endif

}  // namespace

std::uint64_t host_time_ns() noexcept {
#if defined(__x86_64__)
  int state = tsc_clock.state.load(std::memory_order_acquire);
  if (state == TscClock::kReady) {
    return tsc_clock.base_ns +
           static_cast<std::uint64_t>(static_cast<double>(__rdtsc() - tsc_clock.base_tsc) * tsc_clock.ns_per_tick);
  }
  if (state == TscClock::kUnstarted && tsc_clock.state.compare_exchange_strong(state, TscClock::kBusy)) {
    if (!invariant_tsc()) {
      tsc_clock.state.store(TscClock::kUnusable, std::memory_order_release);
    } else {
      sample(tsc_clock.tsc0, tsc_clock.ns0);
      tsc_clock.state.store(TscClock::kSampling, std::memory_order_release);
    }
    return monotonic_ns();
  }
  const std::uint64_t now = monotonic_ns();
  if (state == TscClock::kSampling && now - tsc_clock.ns0 >= kCalibrationNs &&
      tsc_clock.state.compare_exchange_strong(state, TscClock::kBusy)) {
    std::uint64_t tsc = 0, ns = 0;
    sample(tsc, ns);
    if (tsc <= tsc_clock.tsc0) {
      tsc_clock.state.store(TscClock::kUnusable, std::memory_order_release);
      return ns;
    }
    tsc_clock.ns_per_tick = static_cast<double>(ns - tsc_clock.ns0) / static_cast<double>(tsc - tsc_clock.tsc0);
    tsc_clock.base_tsc = tsc;
    tsc_clock.base_ns = ns;
    tsc_clock.state.store(TscClock::kReady, std::memory_order_release);
    return ns;
  }
  return now;
#else
  return monotonic_ns();
#endif
}

namespace {
thread_local GraphReplay graph_replay_of_thread;
}  // namespace

GraphReplay current_graph_replay() noexcept { return graph_replay_of_thread; }
void set_current_graph_replay(GraphReplay replay) noexcept { graph_replay_of_thread = replay; }

}  // namespace cudascope::cuda::instrumentation
