#pragma once
// Live metrics of a recorded process, from the profiler's records (the ones the trace is
// written from): what `cudascope run --metrics` and CUDASCOPE_METRICS in the injection
// library serve while the program runs.
//
//   auto live = std::make_shared<ProfileMetrics>(options);
//   session.start(ProfileMetrics::tee(live, exporters::open_chrome_trace(path)));  // or nullptr: metrics only
//   server.add_source([live] { return live->render(); });
//
// Families (all with the constant labels host, pid, and rank, local_rank, job when known):
//   cudascope_kernels_total, cudascope_kernel_seconds_total        {device, kernel[, nvtx_range]}
//     counts of every kernel: when kernel records are not sampled (the default)
//   cudascope_kernels_estimated_total, cudascope_kernel_seconds_estimated_total   (same labels)
//     ESTIMATES, when kernel records are sampled (options.kernel_sampling; metrics-only
//     recordings with CUDASCOPE_METRICS_SAMPLING=1): each kernel seen counts as the weight of its window (period / window), so
//     the estimates add up integers and never decrease. Exported instead of the two above, so
//     a count and an estimate never share a name; beside them:
//   cudascope_kernel_sampling_ratio                                 fraction of wall time whose
//                                                                   kernels were recorded
//   cudascope_kernel_sampled_records_total                          {device}  kernel records seen
//   cudascope_kernel_sampling_switches_total, _switch_seconds_total  switches of kernel records
//                                                                   and the time they took
//   cudascope_kernel_launches_total                                 exact launch calls, when
//                                                                   SamplingPlan::count_launches
//                                                                   got its CUPTI callback
//   cudascope_memcpy_total, _bytes_total, _seconds_total            {device, kind}
//   cudascope_memset_total, _bytes_total, _seconds_total            {device}
//   cudascope_sync_total, cudascope_sync_seconds_total              {type}, from sync records
//                                                                   (`--activities default,sync`),
//                                                                   else from the synchronize
//                                                                   calls of a trace's launch records
//     when records are sampled, these are recorded in the same windows as kernels and
//     exported as ESTIMATES under *_estimated_total names (cudascope_memcpy_estimated_total,
//     cudascope_memcpy_bytes_estimated_total, ...), for the same reason
//   cudascope_nvtx_range_duration_seconds (histogram)               {domain, range}
//   cudascope_event_duration_seconds (histogram)                    {event}  (Event::elapsed_time spans,
//                                                                   by the start event's name; "" unnamed)
//   cudascope_process_device_memory_bytes, _peak_bytes              {device}  (allocator records)
//   cudascope_profiler_records_total, cudascope_profiler_dropped_records_total{source},
//   cudascope_profiler_buffer_bytes
//
// Cardinality: kernel (or kernel and range), NVTX range and event names are bounded by top_names.
// At the first scrape the top_names by GPU time (range time) get their own series; later,
// free slots go to the next names by time, counted from then on. Everything else is summed
// into kernel="other" / range="other" / event="other", so counters never decrease and the sum over all
// series equals the records seen. Distinct names tracked are capped (kMaxTrackedNames);
// past that, new names count straight into "other". Domains beyond 16 are "other" too.
//
// Thread-safety: the sink side (begin/write/flush/end) runs on the session's writer thread;
// render() and set_session_stats() may be called from any thread.

#include <cudascope/metrics/metrics.h>
#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/session.h>
#include <cudascope/profiler/trace_sink.h>

#include <cstddef>
#include <memory>
#include <string>

namespace cudascope::metrics {

struct ProfileMetricsOptions {
  std::size_t top_names = 20;  // kernel names / NVTX range names with series of their own
  // Kernels also labelled with the innermost NVTX range open on the launching thread when
  // they were launched (needs the launch API records: the `runtime` or `launch` activity).
  bool label_nvtx = false;
  ProcessLabels labels = ProcessLabels::from_environment();
  // Host waits (cudascope_sync_*) counted from the synchronize calls among the launch records
  // (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize), for a session that
  // records those calls and not CUPTI's synchronisation records (a default trace): the same
  // waits, timed by their calls, without the records' cost. Off where synchronisation
  // records are recorded, which count them instead.
  bool host_waits_from_calls = false;
  // Set when the session samples kernel records (SessionOptions::kernel_sampling, the same
  // object): kernel figures are then exported as estimates (see above).
  std::shared_ptr<const profiler::KernelSampling> kernel_sampling;
};

class ProfileMetrics {
 public:
  static constexpr std::size_t kMaxTrackedNames = 100000;

  explicit ProfileMetrics(ProfileMetricsOptions options = {});
  ~ProfileMetrics();
  ProfileMetrics(const ProfileMetrics&) = delete;
  ProfileMetrics& operator=(const ProfileMetrics&) = delete;

  // A sink that counts every record into `metrics`, then hands it to `inner` (nullptr: no
  // trace, metrics only).
  static std::unique_ptr<profiler::TraceSink> tee(std::shared_ptr<ProfileMetrics> metrics,
                                                  std::unique_ptr<profiler::TraceSink> inner);

  // Counts records (as TraceSink::write receives them: NVTX text continuations follow).
  void consume(const profiler::Record* records, std::size_t count);
  // After a batch of consume calls (the tee calls it on flush): kernels waiting for their
  // launch's NVTX range are counted.
  void flushed();
  // The profiler's health figures (the session's on_flush gives them).
  void set_session_stats(const profiler::SessionStats& stats);
  // The exposition text of everything counted so far.
  std::string render();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace cudascope::metrics
