#pragma once
// An instrumentation observer that keeps the name and stream of every kernel the runtime
// reports (install it with cuda::instrumentation::set_observer). Thread-safe: the sim's
// stream workers report from their own threads.

#include <cudascope/cuda/instrumentation.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::testing {

class KernelRecorder : public cuda::instrumentation::Observer {
 public:
  void on_allocator_event(const cuda::instrumentation::AllocatorEvent&) override {}
  void on_kernel(const cuda::instrumentation::KernelActivity& k) override {
    std::lock_guard lock(mutex);
    kernels.emplace_back(k.name, k.stream_id);
  }
  std::mutex mutex;
  std::vector<std::pair<std::string, std::int64_t>> kernels;  // (name, stream id) in report order
};

}  // namespace cudascope::testing
