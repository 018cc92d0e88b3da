#pragma once
// A source of device activity that runs beside the runtime observer (CUPTI on the cuda
// backend). Call order: start -> stop; dropped() from any thread.

#include <cudascope/profiler/session.h>

#include <cstdint>
#include <memory>

namespace cudascope::profiler::detail {

class DeviceSource {
 public:
  virtual ~DeviceSource() = default;
  virtual void start() = 0;
  // Forces every pending record out into the record buffers, then stops.
  virtual void stop() = 0;
  virtual std::uint64_t dropped() const noexcept = 0;
  // Hands over the records that are complete, however few, without stopping: what a live
  // reader (metrics) needs between flushes. Called by the session's writer thread.
  virtual void deliver_completed() noexcept {}
  // A sampled session (SessionOptions::kernel_sampling) switches kernel records on and off
  // from its sampler thread; start() reads the current state from the KernelSampling.
  virtual void set_kernel_records(bool) noexcept {}
};

// nullptr when this build has no CUPTI.
std::unique_ptr<DeviceSource> make_cupti_source(const SessionOptions& options);

// Called once, by the NVTX handlers, when NCCL creates its NVTX domain (its first call): a
// running CUPTI source starts recording NCCL's kernel launches (nccl_nvtx.h). From the thread
// of that NCCL call; does nothing in a build without CUPTI.
void on_nccl_in_process() noexcept;

}  // namespace cudascope::profiler::detail
