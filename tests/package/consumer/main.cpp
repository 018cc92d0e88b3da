// A user's program built against an installed cudascope, on the simulated device. Each part
// uses one exported target and checks what it got back:
//   runtime              a timed kernel through streams and events
//   profiler, exporters  a Session records the program's own kernel into a Chrome trace
//   analysis             reads that trace back, and the allocator snapshot given as argv[1]
//   metrics              renders the allocator's figures as Prometheus text
// Usage: consumer SNAPSHOT TRACE_OUT. Prints one line per part; exits 1 naming a failed part.
#include <cudascope/cuda.h>

#if CONSUMER_WITH_PROFILER && CONSUMER_WITH_EXPORTERS && CONSUMER_WITH_ANALYSIS
#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/loader.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>
#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/profiler/session.h>
#endif
#if CONSUMER_WITH_METRICS
#include <cudascope/metrics/metrics.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace cuda = cudascope::cuda;

namespace {

int failures = 0;

void check(bool ok, const char* part, const std::string& what) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", part, what.c_str());
  if (!ok) ++failures;
}

float timed_kernel_ms() {
  cuda::Stream stream;
  cuda::Event start(true), end(true);
  start.record(stream);
  cuda::busy_wait(std::chrono::milliseconds(5), stream);
  end.record(stream);
  end.synchronize();
  return start.elapsed_time(end);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer SNAPSHOT TRACE_OUT\n");
    return 2;
  }
  const std::string snapshot_path = argv[1], trace_path = argv[2];
  setenv("CUDASCOPE_BACKEND", "sim", 1);

  const float ms = timed_kernel_ms();
  check(cuda::device_count() == 2 && ms >= 4.9f, "runtime",
        std::string("cudascope ") + cudascope::kVersion + ", " + std::to_string(cuda::device_count()) +
            " devices, kernel " + std::to_string(ms) + " ms");

#if CONSUMER_WITH_PROFILER && CONSUMER_WITH_EXPORTERS && CONSUMER_WITH_ANALYSIS
  {
    namespace analysis = cudascope::analysis;
    cudascope::profiler::Session session;
    session.start(cudascope::exporters::open_chrome_trace(trace_path));
    timed_kernel_ms();
    session.stop();
    const auto read = analysis::read_trace(trace_path);
    const auto stats = read.ok() ? analysis::compute_stats(read.trace) : analysis::TraceStats{};
    check(read.ok() && read.trace.complete && !stats.kernels.empty(), "profiler+exporters+analysis",
          read.ok() ? trace_path + ": " + std::to_string(stats.kernels.size()) + " kernel name(s), " +
                          std::to_string(stats.events) + " events"
                    : read.error);

    const auto snapshot = analysis::load_snapshot(snapshot_path);
    const auto figures = snapshot.ok() ? analysis::compute_figures(snapshot.value()) : analysis::Figures{};
    check(snapshot.ok() && figures.segments > 0 && figures.trace_entries > 0, "analysis",
          snapshot_path + ": " + std::to_string(figures.segments) + " segments, " +
              std::to_string(figures.trace_entries) + " trace entries");
  }
#endif

#if CONSUMER_WITH_METRICS
  {
    void* block = cuda::caching_allocator_alloc(3 << 20);
    const std::string text = cudascope::metrics::render_metrics();
    cuda::caching_allocator_delete(block);
    check(text.find("cudascope_memory_allocated_bytes") != std::string::npos, "metrics",
          std::to_string(text.size()) + " bytes of Prometheus text");
  }
#endif
  return failures == 0 ? 0 : 1;
}
