#include "kernel_sampler.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace cudascope::profiler::detail {

using Clock = std::chrono::steady_clock;

namespace {

// A seed for the slots' draw; the clock when the system offers no random device.
std::uint64_t draw_seed() noexcept {
  try {
    return std::random_device{}();
  } catch (...) {
    return static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  }
}

}  // namespace

KernelSampler::KernelSampler(std::shared_ptr<KernelSampling> sampling, std::function<void(bool)> switch_kernels)
    : sampling_(std::move(sampling)), switch_kernels_(std::move(switch_kernels)) {}

KernelSampler::~KernelSampler() { stop(); }

void KernelSampler::start() {
  const std::string& log = sampling_->plan().switch_log;
  if (!log.empty()) {
    switch_log_.reset(std::fopen(log.c_str(), "ae"));
    if (!switch_log_) std::fprintf(stderr, "cudascope: no switch log: cannot open %s: %s\n", log.c_str(), std::strerror(errno));
  }
  sampling_->begin(sampling_->now());
  // Nothing may escape into std::terminate inside the host program: a failure ends the
  // sampling (kernel records off) and says so.
  thread_ = std::thread([this] {
    try {
      run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope: kernel sampling stopped: %s\n", e.what());
      if (sampling_->recording_kernels()) switch_off();
    }
  });
}

void KernelSampler::stop() {
  if (!thread_.joinable()) return;
  sampling_->stop();
  thread_.join();
  switch_log_.reset();
}

void KernelSampler::switch_on(std::uint64_t weight) {
  // Marked on before CUPTI is told, so any kernel it records finds its segment.
  sampling_->open(sampling_->now(), weight);
  timed_switch(true);
}

void KernelSampler::switch_off() {
  timed_switch(false);
  sampling_->close(sampling_->now());
}

void KernelSampler::timed_switch(bool on) {
  const auto start = Clock::now();
  switch_kernels_(on);
  const auto end = Clock::now();
  sampling_->switched(end - start);
  if (switch_log_) log_switch(on, start, end);
}

// steady_clock is CLOCK_MONOTONIC here, the clock of Python's time.monotonic_ns(). Flushed at
// once: two lines a second at most, on this thread, and a job may end without a clean stop.
void KernelSampler::log_switch(bool on, Clock::time_point start, Clock::time_point end) {
  const auto ns = [](Clock::time_point t) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  std::fprintf(switch_log_.get(), "%s %lld %lld\n", on ? "on" : "off", ns(start), ns(end));
  std::fflush(switch_log_.get());
}

void KernelSampler::record_full() {
  switch_on(1);
  while (sampling_->full_requested() && !sampling_->stopping()) sampling_->wait_until(Clock::now() + std::chrono::seconds(1));
  switch_off();
}

// Sleeps until `deadline`; false, at once, when the recording stops or a trace window asks
// for every kernel.
bool KernelSampler::sleep_until(Clock::time_point deadline) {
  while (!sampling_->stopping() && !sampling_->full_requested()) {
    if (Clock::now() >= deadline) return true;
    sampling_->wait_until(deadline);
  }
  return false;
}

// A full-recording request cuts a sampled window short (its records would otherwise count
// with the window's weight and again as exact ones) and restarts the periods when it ends:
// every instant is still seen with the same chance, or fully.
void KernelSampler::run() {
  SamplingSchedule schedule(sampling_->plan(), draw_seed());
  const auto period = sampling_->plan().period;
  const auto window = sampling_->plan().slot();
  Clock::time_point period_start = Clock::now();
  while (!sampling_->stopping()) {
    if (sampling_->full_requested()) {
      record_full();
      period_start = Clock::now();
      continue;
    }
    const Clock::time_point open_at = period_start + schedule.next_offset();
    if (!sleep_until(open_at)) continue;
    switch_on(sampling_->plan().weight());
    const bool whole_window = sleep_until(open_at + window);
    switch_off();
    if (!whole_window || !sleep_until(period_start + period)) continue;
    period_start += period;
    // A thread held up (an overloaded host) starts afresh rather than racing through late windows.
    if (Clock::now() > period_start + window) period_start = Clock::now();
  }
}

}  // namespace cudascope::profiler::detail
