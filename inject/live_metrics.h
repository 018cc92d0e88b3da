#pragma once
// Live metrics of the recorded process: with CUDASCOPE_METRICS=address:port, the records the
// trace is written from are also counted into Prometheus metrics served on that address
// (metrics::ProfileMetrics) while the program runs, beside the runtime's own figures when
// the program uses the cudascope runtime (both share metrics::process_server).
//
// Environment (`cudascope run --metrics ...` sets these):
//   CUDASCOPE_METRICS=address:port   serve /metrics there (loopback unless the address says otherwise)
//   CUDASCOPE_METRICS_TOP=N          kernel and NVTX range names with their own series (0-1000, default 20)
//   CUDASCOPE_METRICS_LABEL_NVTX=1   label kernels with the innermost NVTX range of their launch
// (each read by util/env_value.h: a bad value is named on stderr and the default used)
//   CUDASCOPE_JOB=name               a job label on every series
//   CUDASCOPE_NO_TRACE=1             metrics only: no trace file, but trace windows on request
//                                    (GET /trace?token=T&duration=S, see trace_window.h)
//   Metrics only, every kernel is recorded (exact counts) unless sampling is asked for
//   (profiler/kernel_sampling.h; docs/metrics.md, "Sampled kernel records"):
//   CUDASCOPE_METRICS_SAMPLING=1     sample kernel records in windows (estimates, for less cost;
//                                    opt-in: switching CUPTI's records has crashed its thread)
//   CUDASCOPE_METRICS_SAMPLE_WINDOW=S  seconds of kernel records per period (0.001-60, default 0.05)
//   CUDASCOPE_METRICS_SAMPLE_PERIOD=S  the period (0.01-3600, default 1; at least the window)
//   CUDASCOPE_METRICS_COUNT_LAUNCHES=1 exact kernel launch counts beside the sample (a CUPTI
//                                    callback per launch; off by default)
//   CUDASCOPE_METRICS_SAMPLE_LOG=F   append each switch of the records to F, for a bench that
//                                    times the job's steps in and out of the windows
//   CUDASCOPE_TRACE_TOKEN=T, CUDASCOPE_TRACE_WINDOW_DIR=/dir   the job's token and the directory
//                                    windows are written into (trace_window.h)
//
// A failure to serve (the port is taken, e.g. by another process of the same program) is
// reported on stderr and recording goes on without metrics.

#include <cudascope/profiler/kernel_sampling.h>
#include <cudascope/profiler/session.h>
#include <cudascope/profiler/trace_sink.h>

#include <memory>

namespace cudascope::inject {

// The kernel sampling of a metrics-only recording, from the variables above; null unless
// CUDASCOPE_METRICS_SAMPLING=1 (a window or period set without it is named on stderr as
// ignored). A value that cannot be used is named on stderr and the defaults are taken.
std::shared_ptr<profiler::KernelSampling> kernel_sampling_from_environment();

// The sink a recording writes to: `trace` (null under CUDASCOPE_NO_TRACE) and, with
// CUDASCOPE_METRICS, the live metrics, whose health figures `options.on_flush` then also
// updates.
std::unique_ptr<profiler::TraceSink> open_recording_sinks(std::unique_ptr<profiler::TraceSink> trace,
                                                          profiler::SessionOptions& options);

}  // namespace cudascope::inject
