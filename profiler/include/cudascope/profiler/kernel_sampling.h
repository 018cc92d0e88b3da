#pragma once
// Sampled kernel records for always-on metrics. A CUPTI record of every kernel costs a
// launch-bound job far more than the 2% metrics may take (see bench/profiler/), and so do
// CUPTI's copy, memset and synchronisation records merely being enabled, so a metrics-only
// recording may ask (opt-in, CUDASCOPE_METRICS_SAMPLING=1: switching CUPTI's kinds at run time
// has crashed CUPTI's worker thread, docs/metrics.md) for records of device work only during
// short windows: by default
// 50 ms in every 1 s (5%). Each period is cut into period / window slots and one slot, drawn
// at random, is recorded: every instant then has the same chance (window / period) of being
// seen, whatever the job's step time, so a job whose step divides the period is not always
// seen in the same phase, and the estimate is unbiased for any workload.
// A kernel seen in a window stands for period / window kernels: its weight. Readers
// (metrics::ProfileMetrics) scale what they see by the weight of the window a record
// falls in, and export the results as estimates beside sampled_ratio().
//
// The timeline is a series of segments, each from the moment kernel records are switched on
// to the start of the next segment: a sampled window (on for `window`, then off until the
// next segment opens; weight period / window) or a stretch of full recording (a trace window
// asked for every kernel: on throughout, weight 1). A kernel belongs to the last segment opened at
// or before its start: it cannot start before its launch, and its launch came after the
// switch that let CUPTI record it. (A kernel queued for longer than a whole off-phase would be
// given the next segment's weight, which in steady sampling is the same.)
//
// Call order: begin -> (open -> close)* from the one thread that switches kernel records (the
// session's sampler); weight_at, sampled_ratio, recording_kernels from any thread.
// request_full from any thread (trace windows). Thread-safe.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace cudascope::profiler {

struct SamplingPlan {
  std::chrono::nanoseconds window{std::chrono::milliseconds(50)};
  std::chrono::nanoseconds period{std::chrono::seconds(1)};
  // Exact launch counts beside the sample (a CUPTI callback on each kernel launch call). Off
  // by default: a callback per launch is a cost to be measured against the 2% budget
  // (bench/profiler/run_overhead_bench.py), and CUPTI allows one callback subscriber per
  // process, which torch.profiler needs for itself.
  bool count_launches = false;
  // Where the sampler appends a line per switch of the records, "on|off START END" in
  // CLOCK_MONOTONIC nanoseconds before and after CUPTI was told (empty: no log). A bench reads
  // it to time a job's own steps in and out of the windows, inside one process
  // (bench/profiler/run_window_overhead.py); not a metric.
  std::string switch_log;

  // Slots per period: period / window rounded to a whole number (at least 1). The window
  // recorded is period / slots(), so that the slots tile the period exactly.
  std::int64_t slots() const noexcept;
  std::chrono::nanoseconds slot() const noexcept { return period / slots(); }
  double duty() const noexcept { return 1.0 / static_cast<double>(slots()); }
  // The weight of a kernel seen in a sampled window: the kernels one record stands for. A
  // whole number, so estimates add up in integers and counters never step back by rounding.
  std::uint64_t weight() const noexcept { return static_cast<std::uint64_t>(slots()); }
};

// Which slot of each period is recorded: one drawn uniformly, independently per period.
// Deterministic for a seed, so tests replay the windows the sampler would.
class SamplingSchedule {
 public:
  SamplingSchedule(SamplingPlan plan, std::uint64_t seed) : plan_(plan), random_(seed) {}
  // The offset from the next period's start at which its window opens (a whole slot).
  std::chrono::nanoseconds next_offset();
  const SamplingPlan& plan() const noexcept { return plan_; }

 private:
  SamplingPlan plan_;
  std::mt19937_64 random_;
};

class KernelSampling {
 public:
  // `clock`: nanoseconds on the records' timeline (default cuda::instrumentation::host_time_ns).
  explicit KernelSampling(SamplingPlan plan, std::function<std::uint64_t()> clock = {});

  const SamplingPlan& plan() const noexcept { return plan_; }
  std::uint64_t now() const { return clock_(); }

  // --- The switching thread ---
  // Sampling starts at `t`: the sampled ratio counts wall time from here.
  void begin(std::uint64_t t);
  // Kernel records are on from `t`; each record of the segment stands for `weight` kernels.
  void open(std::uint64_t t, std::uint64_t weight);
  // Kernel records are off from `t` (the segment goes on until the next open).
  void close(std::uint64_t t);
  // Whether records of device work (kernels, copies, memsets, synchronisations) are wanted
  // now: the window is open (the sim's reports read it per record).
  bool recording_kernels() const noexcept { return on_.load(std::memory_order_relaxed); }
  // One switch of the device source's kinds took `took` (what enabling and disabling CUPTI's
  // kernel records costs, exported so a run shows it).
  void switched(std::chrono::nanoseconds took) noexcept {
    switches_.fetch_add(1, std::memory_order_relaxed);
    switch_ns_.fetch_add(static_cast<std::uint64_t>(took.count()), std::memory_order_relaxed);
  }
  std::uint64_t switches() const noexcept { return switches_.load(std::memory_order_relaxed); }
  std::uint64_t switch_ns() const noexcept { return switch_ns_.load(std::memory_order_relaxed); }

  // --- Readers ---
  struct Segment {
    std::uint64_t open_ns;
    std::uint64_t weight;
  };
  // The segments still kept (the last kKeptSegments), oldest first: a reader takes them once
  // per batch of records and looks each kernel up with weight_in.
  std::vector<Segment> segments() const;
  static std::uint64_t weight_in(const std::vector<Segment>& segments, std::uint64_t t) noexcept;
  std::uint64_t weight_at(std::uint64_t t) const { return weight_in(segments(), t); }
  // The fraction of wall time since begin() during which kernel records were on (0 before).
  double sampled_ratio() const;

  // --- Trace windows ---
  // Every kernel is recorded while at least one request holds (a trace window is written).
  void request_full(bool on);
  bool full_requested() const noexcept { return full_requests_.load() > 0; }
  // Waits until `deadline` or until stop() or a change of full requests; returns at once
  // when stopping. For the switching thread.
  void wait_until(std::chrono::steady_clock::time_point deadline);
  void stop();
  bool stopping() const;

  // --- Exact launch counts (plan().count_launches) ---
  void count_launch() noexcept { launches_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t launches() const noexcept { return launches_.load(std::memory_order_relaxed); }
  // Whether the launch callback was installed (CUPTI allows one subscriber per process).
  void set_counting_launches(bool on) noexcept { counting_launches_.store(on); }
  bool counting_launches() const noexcept { return counting_launches_.load(); }

  // Segments kept for late records: at 1 s periods, about a minute of them.
  static constexpr std::size_t kKeptSegments = 64;

 private:
  const SamplingPlan plan_;
  std::function<std::uint64_t()> clock_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Segment> segments_;
  std::uint64_t begin_ns_ = 0;
  std::uint64_t on_since_ns_ = 0;
  std::uint64_t on_total_ns_ = 0;
  bool begun_ = false;
  bool stopping_ = false;
  int full_generation_ = 0;
  std::atomic<bool> on_{false};
  std::atomic<int> full_requests_{0};
  std::atomic<std::uint64_t> launches_{0};
  std::atomic<std::uint64_t> switches_{0};
  std::atomic<std::uint64_t> switch_ns_{0};
  std::atomic<bool> counting_launches_{false};
};

}  // namespace cudascope::profiler
