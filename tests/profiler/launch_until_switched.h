#pragma once
// The sampling and the load a sampled session is tested under, on the sim and on a GPU:
// threads that each launch short kernels on a stream of their own, synchronising every few,
// until the sampler has switched kernel records `switches` times or `deadline` has passed (a
// bound on a stuck sampler, not a timing: a loaded machine only takes longer). Join the
// threads returned.

#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/stream.h>
#include <cudascope/profiler/kernel_sampling.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace cudascope::testing {

// Kernel records on for 1 ms in every 2 ms: 1,000 switches a second, 500 times the default's.
inline std::shared_ptr<profiler::KernelSampling> sampling_every_millisecond() {
  profiler::SamplingPlan plan;
  plan.window = std::chrono::milliseconds(1);
  plan.period = std::chrono::milliseconds(2);
  return std::make_shared<profiler::KernelSampling>(plan);
}

inline bool switched_enough(const profiler::KernelSampling& sampling, std::uint64_t switches,
                            std::chrono::steady_clock::time_point deadline) {
  return sampling.switches() >= switches || std::chrono::steady_clock::now() >= deadline;
}

inline std::vector<std::thread> launch_until_switched(const profiler::KernelSampling& sampling, std::uint64_t switches,
                                                      std::chrono::steady_clock::time_point deadline, int threads,
                                                      std::chrono::microseconds kernel, int sync_every) {
  std::vector<std::thread> launchers;
  for (int t = 0; t < threads; ++t) {
    launchers.emplace_back([&sampling, switches, deadline, kernel, sync_every] {
      cuda::Stream stream(0);
      for (int i = 0; !switched_enough(sampling, switches, deadline); ++i) {
        cuda::busy_wait(kernel, stream);
        if (i % sync_every == sync_every - 1) stream.synchronize();
      }
      stream.synchronize();
    });
  }
  return launchers;
}

}  // namespace cudascope::testing
