#include "health_sampler.h"

#include <cudascope/cuda/error.h>

namespace cudascope::metrics::detail {

HealthSampler::Reading HealthSampler::read(int device) {
  Reading reading;
  try {
    reading.figures = cuda::device_telemetry(device);
  } catch (const cuda::Error& e) {
    reading.error = e.what();
  }
  return reading;
}

HealthSampler::HealthSampler(std::vector<int> devices, std::chrono::milliseconds interval)
    : devices_(std::move(devices)), interval_(interval) {
  sample_all();
  thread_ = std::thread([this] { run(); });
}

HealthSampler::~HealthSampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

HealthSampler::Reading HealthSampler::latest(int device) const {
  {
    std::lock_guard lock(mutex_);
    const auto found = readings_.find(device);
    if (found != readings_.end()) return found->second;
  }
  return read(device);
}

void HealthSampler::sample_all() {
  for (int device : devices_) {
    Reading reading = read(device);  // outside the lock: scrapes keep the previous reading meanwhile
    std::lock_guard lock(mutex_);
    readings_[device] = std::move(reading);
  }
}

void HealthSampler::run() {
  std::unique_lock lock(mutex_);
  while (!stop_requested_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    sample_all();
    lock.lock();
  }
}

}  // namespace cudascope::metrics::detail
