#pragma once
// The CUPTI activity source: CUPTI fills activity buffers the source hands it, completes them
// on its own thread, and the source decodes them into that thread's record buffer.
//
// CUPTI calls plain C functions; the static trampolines forward to the one live source,
// whose API-facing methods are virtual so tests can drive them with fabricated buffers.
// Timestamps: CUPTI is given the runtime's clock (host_time_ns), so device and host records
// share one timeline without offset estimation.
//
// Thread-safety: start/stop from the session's controlling thread; the buffer callbacks run
// on CUPTI's threads (one completion at a time per CUPTI's contract for a flush, but
// requests may come from any thread).

#include "device_source.h"

#include <cudascope/profiler/cupti_decoder.h>

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cudascope::profiler::detail {

// What a user can do about a CUPTI failure whose cause lies outside the program (the driver,
// another profiler, the machine's settings), as a sentence to append to its message; empty
// for the others.
std::string cupti_failure_advice(CUptiResult status);

class CuptiSource : public DeviceSource {
 public:
  explicit CuptiSource(const SessionOptions& options);
  ~CuptiSource() override;

  void start() override;
  void stop() override;
  std::uint64_t dropped() const noexcept override { return dropped_.load(std::memory_order_relaxed); }
  // cuptiActivityFlushAll(0): every buffer whose records are all complete, full or not.
  // CUPTI's periodic flush (cuptiActivityFlushPeriod) returns full buffers only, so without
  // this a process that launches fewer kernels than fill a buffer would show none of them
  // until it ends.
  void deliver_completed() noexcept override;
  // Sampled sessions: the kinds that record work and the picked launch calls are enabled only
  // between set_kernel_records(true) and (false): in a sampled window those metrics read
  // (all but CUPTI's overhead and external-correlation records), in a trace window every work
  // kind. CUPTI allows kinds to be enabled and disabled while the program runs; records
  // already in buffers stay there and are delivered as usual.
  void set_kernel_records(bool on) noexcept override;

  // NCCL made its first call in this process (detail::on_nccl_in_process): the running
  // source, if any, subscribes for its launches if it records them and has not yet. Any thread.
  static void nccl_called() noexcept;

  // What the launch callback does (its userdata): set before subscribing, read on every
  // launch it is enabled for.
  struct LaunchCallbacks {
    KernelSampling* counter = nullptr;  // counts launches (SamplingPlan::count_launches)
    std::atomic<bool> nccl_launches{false};  // records the driver launches made in NCCL's calls
  };

  // CUPTI-facing.
  virtual void on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  virtual void on_buffer_completed(void* context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                   std::size_t valid_bytes);

 private:
  static void requested_trampoline(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void completed_trampoline(void* context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t size,
                                   std::size_t valid_bytes);
  static std::atomic<CuptiSource*> live_;
  // Buffer callbacks running now (any source): release_live_source() waits for them.
  static std::atomic<int> callbacks_in_flight_;
  struct InFlight;
  void release_live_source() noexcept;
  void disable_session_records() noexcept;
  std::size_t buffer_bytes() const noexcept;  // each buffer's: options_.cupti_buffer_bytes, aligned

  const SessionOptions options_;
  std::mutex decode_mutex_;
  CuptiDecoder decoder_;
  // Completed buffers are kept for reuse: CUPTI writes records into them on the launching
  // thread, and a recycled buffer's pages are already mapped.
  std::mutex pool_mutex_;
  std::vector<std::uint8_t*> free_buffers_;
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> started_{false};  // read by deliver_completed on the writer thread
  // Whether start() got as far as enabling this session's kinds: what a failed start undoes.
  bool enabling_ = false;
  // Whether start() enabled the whole RUNTIME kind because this CUPTI cannot pick calls;
  // only then does stop() disable it (see picked_runtime_callbacks).
  bool runtime_fallback_ = false;
  // Sampled sessions: whether kernel records are on now (under kernel_mutex_).
  std::mutex kernel_mutex_;
  bool kernel_records_on_ = false;
  // What each kind of window switches (fixed at construction: a switch allocates nothing),
  // and which of the two the open window switched on.
  std::vector<CUpti_ActivityKind> sampled_window_kinds_, trace_window_kinds_;
  const std::vector<CUpti_ActivityKind>* window_kinds_ = &sampled_window_kinds_;
  void switch_sampled_kinds(bool on) noexcept;
  // The one CUPTI subscription a process may hold, for the launch callbacks (or null).
  // Subscribed when the session starts if it counts launches or NCCL has made a call by then,
  // else at NCCL's first call: a program that never calls NCCL pays no callback for its NCCL
  // launch records. Under subscriber_mutex_ (start, stop and the NCCL call's thread).
  std::mutex subscriber_mutex_;
  LaunchCallbacks launch_callbacks_;
  void* launch_subscriber_ = nullptr;
  bool launch_callbacks_ready_ = false;  // between start's subscription and stop's
  void subscribe_launch_callbacks(bool nccl_has_called) noexcept;
  bool open_launch_subscription(bool counting, bool nccl) noexcept;
  void unsubscribe_launch_callbacks() noexcept;
  void subscribe_for_nccl() noexcept;
  // CUDASCOPE_CUPTI_DISCARD=1, for benchmarks only: completed buffers are returned without
  // being decoded, so a run measures what CUPTI itself costs with the same activity kinds
  // (the floor under any profiler built on it).
  const bool discard_;
};

// The launch callback's NCCL part: a driver launch made while the calling thread is inside an
// NCCL range naming a communicator becomes a driver API record (cupti_source.cpp). Declared
// for tests, which call it with fabricated callback data.
void record_nccl_launch(CUpti_CallbackId cbid, const CUpti_CallbackData& call) noexcept;

}  // namespace cudascope::profiler::detail
