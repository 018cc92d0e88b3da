#pragma once
// The runtime's instrumentation observer: turns the sim backend's device activity, the
// runtime's NVTX calls and the caching allocator's events into Records.
//
// Thread-safety: the observer methods run on whichever thread did the work and only
// append to that thread's record buffer. Installed by the Session while it records.

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/profiler/activities.h>
#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/record.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace cudascope::profiler::detail {

class RuntimeSource final : public cuda::instrumentation::Observer {
 public:
  // `sampling`: kernels, copies, memsets and synchronisations are reported only while its
  // window is open (null: all of them), as the CUPTI source records them.
  explicit RuntimeSource(ActivitySet activities, const KernelSampling* sampling = nullptr)
      : activities_(activities), sampling_(sampling) {}

  void on_allocator_event(const cuda::instrumentation::AllocatorEvent& event) override;
  void on_kernel(const cuda::instrumentation::KernelActivity& kernel) override;
  void on_copy(const cuda::instrumentation::CopyActivity& copy) override;
  void on_memset(const cuda::instrumentation::MemsetActivity& memset) override;
  void on_sync(const cuda::instrumentation::SyncActivity& sync) override;
  void on_api_call(const cuda::instrumentation::ApiCall& call) override;
  void on_nvtx(const cuda::instrumentation::NvtxEvent& event) override;
  void on_device_memory(const cuda::instrumentation::DeviceMemoryActivity& memory) override;
  void on_event_timing(const cuda::instrumentation::EventTiming& timing) override;

 private:
  // The first record of a device is preceded by a kDevice record with its properties.
  void describe_device(int device) noexcept;
  bool outside_window() const noexcept { return sampling_ != nullptr && !sampling_->recording_kernels(); }

  const ActivitySet activities_;
  const KernelSampling* const sampling_;
  std::atomic<std::uint64_t> described_devices_{0};
  std::mutex device_memory_mutex_;
  DeviceMemoryTally device_memory_;
};

// True once an NVTX injection handler is installed: NVTX then reaches the profiler through
// the injection, and the runtime's own NVTX reports would count every range twice.
bool nvtx_injection_active() noexcept;

}  // namespace cudascope::profiler::detail
