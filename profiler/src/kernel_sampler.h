#pragma once
// The thread that switches kernel records on and off for a sampled recording
// (kernel_sampling.h): in each period it waits for the period's drawn slot, switches kernel
// records on for it, then off; while a trace window asks for every kernel, they stay on.
//
// Call order: start -> stop, from the session's controlling thread. `switch_kernels(on)`
// runs on the sampler's thread and must not throw.

#include <cudascope/profiler/kernel_sampling.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

namespace cudascope::profiler::detail {

class KernelSampler {
 public:
  KernelSampler(std::shared_ptr<KernelSampling> sampling, std::function<void(bool)> switch_kernels);
  ~KernelSampler();
  KernelSampler(const KernelSampler&) = delete;
  KernelSampler& operator=(const KernelSampler&) = delete;

  void start();
  // Switches kernel records off and joins the thread. Idempotent.
  void stop();

 private:
  void run();
  bool sleep_until(std::chrono::steady_clock::time_point deadline);
  void switch_on(std::uint64_t weight);
  void switch_off();
  void timed_switch(bool on);
  void log_switch(bool on, std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end);
  // Records every kernel until no trace window asks for it.
  void record_full();

  std::shared_ptr<KernelSampling> sampling_;
  std::function<void(bool)> switch_kernels_;
  std::thread thread_;
  struct CloseFile {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, CloseFile> switch_log_;  // plan().switch_log, from start() on
};

}  // namespace cudascope::profiler::detail
