#include <cudascope/profiler/kernel_sampling.h>

#include <cudascope/cuda/instrumentation.h>

#include <algorithm>
#include <cmath>

namespace cudascope::profiler {

std::int64_t SamplingPlan::slots() const noexcept {
  if (window.count() <= 0 || period.count() <= window.count()) return 1;
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(period.count()) / static_cast<double>(window.count())));
}

std::chrono::nanoseconds SamplingSchedule::next_offset() {
  std::uniform_int_distribution<std::int64_t> pick(0, plan_.slots() - 1);
  return plan_.slot() * pick(random_);
}

KernelSampling::KernelSampling(SamplingPlan plan, std::function<std::uint64_t()> clock)
    : plan_(plan), clock_(clock ? std::move(clock) : [] { return cuda::instrumentation::host_time_ns(); }) {}

void KernelSampling::begin(std::uint64_t t) {
  std::lock_guard lock(mutex_);
  begin_ns_ = t;
  begun_ = true;
  stopping_ = false;
}

void KernelSampling::open(std::uint64_t t, std::uint64_t weight) {
  std::lock_guard lock(mutex_);
  segments_.push_back({t, weight});
  if (segments_.size() > kKeptSegments) segments_.pop_front();
  if (!on_.load(std::memory_order_relaxed)) on_since_ns_ = t;
  on_.store(true, std::memory_order_relaxed);
}

void KernelSampling::close(std::uint64_t t) {
  std::lock_guard lock(mutex_);
  if (!on_.load(std::memory_order_relaxed)) return;
  on_total_ns_ += t > on_since_ns_ ? t - on_since_ns_ : 0;
  on_.store(false, std::memory_order_relaxed);
}

std::vector<KernelSampling::Segment> KernelSampling::segments() const {
  std::lock_guard lock(mutex_);
  return {segments_.begin(), segments_.end()};
}

std::uint64_t KernelSampling::weight_in(const std::vector<Segment>& segments, std::uint64_t t) noexcept {
  if (segments.empty()) return 1;
  // The last segment opened at or before t; a record older than every kept segment takes the oldest's.
  const auto after = std::upper_bound(segments.begin(), segments.end(), t,
                                      [](std::uint64_t time, const Segment& s) { return time < s.open_ns; });
  return after == segments.begin() ? segments.front().weight : std::prev(after)->weight;
}

double KernelSampling::sampled_ratio() const {
  const std::uint64_t now_ns = clock_();
  std::lock_guard lock(mutex_);
  if (!begun_ || now_ns <= begin_ns_) return 0.0;
  std::uint64_t on = on_total_ns_;
  if (on_.load(std::memory_order_relaxed) && now_ns > on_since_ns_) on += now_ns - on_since_ns_;
  return std::min(1.0, static_cast<double>(on) / static_cast<double>(now_ns - begin_ns_));
}

void KernelSampling::request_full(bool on) {
  {
    std::lock_guard lock(mutex_);
    full_requests_.fetch_add(on ? 1 : -1);
    ++full_generation_;
  }
  changed_.notify_all();
}

void KernelSampling::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const int generation = full_generation_;
  changed_.wait_until(lock, deadline, [&] { return stopping_ || full_generation_ != generation; });
}

void KernelSampling::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
}

bool KernelSampling::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

}  // namespace cudascope::profiler
