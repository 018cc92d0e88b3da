// `cudascope demo`: a small workload on the current backend (auto by default).
#include "checks.h"
#include "command.h"

#include <cudascope/cuda.h>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

struct DemoOptions {
  int iterations = 20;
  double kernel_ms = 2.0;
  double hold_s = 0;     // keep the last steps' memory and the process alive this long at the end
  std::string snapshot;  // where to dump an allocator snapshot of the run, if anywhere
};

// Waits `seconds` or until SIGINT/SIGTERM, which the caller blocked before any thread started
// so that they arrive here instead of killing the process with the memory still held.
void hold(double seconds, const sigset_t& stop_signals) {
  timespec timeout{};
  timeout.tv_sec = static_cast<time_t>(seconds);
  timeout.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  while (sigtimedwait(&stop_signals, nullptr, &timeout) < 0 && errno == EINTR) {
  }
}

// Not inlined: the snapshots' C++ stacks show the demo's allocations under a frame of its own,
// whatever a compiler inlines into the command's callback.
[[gnu::noinline]] void run_demo(const DemoOptions& options) {
  using namespace cudascope;
  cudascope::cli::check_backend_variable();
  // The demo runs wherever it can: a GPU when there is one, else the simulated device.
  if (std::getenv("CUDASCOPE_BACKEND") == nullptr) setenv("CUDASCOPE_BACKEND", "auto", 1);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (options.hold_s > 0) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string backend = cuda::backend_name();
  if (!cuda::is_available()) {
    throw std::runtime_error("no device available on the '" + backend + "' backend");
  }
  const cuda::DeviceProperties props = cuda::get_device_properties(0);
  std::printf("cudascope demo on the %s backend: %d device(s), device 0 is %s (sm_%d%d, %.1f GiB)\n",
              backend.c_str(), cuda::device_count(), props.name.c_str(), props.major, props.minor,
              static_cast<double>(props.total_memory) / (1ULL << 30));

  // Record the allocator's history from the start, so the snapshot shows the whole run.
  if (!options.snapshot.empty()) cuda::memory::record_memory_history("all", "all", "all");

  cuda::Stream compute(0);
  cuda::Stream copy(0);
  cuda::Event start(true), end(true);
  std::vector<void*> activations;  // memory through the caching allocator, as a training step's
  {
    cuda::StreamGuard on_compute(compute);
    cuda::nvtx::Range demo_range("demo");
    start.record();
    for (int i = 0; i < options.iterations; ++i) {
      cuda::nvtx::Range step("step " + std::to_string(i));
      for (std::size_t size : {std::size_t{4} << 10, std::size_t{3} << 20, std::size_t{24} << 20}) {
        activations.push_back(cuda::caching_allocator_alloc(size + static_cast<std::size_t>(i) * 512, 0, compute));
      }
      cuda::busy_wait(std::chrono::nanoseconds(static_cast<long>(options.kernel_ms * 1e6)), compute);
      if (i % 4 == 0) cuda::busy_wait(std::chrono::nanoseconds(static_cast<long>(options.kernel_ms * 5e5)), copy);
      if (activations.size() > 6) {  // keep two steps alive
        for (int k = 0; k < 3; ++k) cuda::caching_allocator_delete(activations[static_cast<std::size_t>(k)]);
        activations.erase(activations.begin(), activations.begin() + 3);
      }
    }
    compute.wait_stream(copy);
    end.record();
  }
  end.synchronize();
  const float elapsed = start.elapsed_time(end);
  const auto [free_bytes, total_bytes] = cuda::mem_get_info(0);
  std::printf("ran %d steps of %g ms on two streams in %.2f ms; device memory free %.1f of %.1f GiB\n",
              options.iterations, options.kernel_ms, elapsed, static_cast<double>(free_bytes) / (1ULL << 30),
              static_cast<double>(total_bytes) / (1ULL << 30));
  if (options.hold_s > 0) {
    std::printf("holding %.1f MiB of the last two steps for %g s (Ctrl-C ends it)\n",
                static_cast<double>(cuda::memory_allocated(0)) / (1ULL << 20), options.hold_s);
    std::fflush(stdout);
    hold(options.hold_s, stop_signals);
  }
  for (void* p : activations) cuda::caching_allocator_delete(p);
  std::fputs(cuda::memory_summary(0, /*abbreviated=*/true).c_str(), stdout);
  if (!options.snapshot.empty()) {
    cuda::memory::dump_snapshot(options.snapshot);
    std::printf("allocator snapshot written to %s (open it with: cudascope view %s)\n", options.snapshot.c_str(),
                options.snapshot.c_str());
  }
}

}  // namespace

CUDASCOPE_COMMAND(demo, 20) {
  using cudascope::cli::FiniteRange;
  static DemoOptions options;
  CLI::App* sub = app.add_subcommand("demo", "Run a small workload on the current backend (default: auto)");
  sub->add_option("--iterations", options.iterations, "Steps to run")->check(CLI::Range(1, 100000));
  sub->add_option("--kernel-ms", options.kernel_ms, "Length of each step's kernel in ms")
      ->check(FiniteRange(0, 1000, "ms"));
  sub->add_option("--hold", options.hold_s,
                  "At the end, keep the last two steps' memory and the process alive this many seconds (Ctrl-C "
                  "ends it early), e.g. for a scrape of CUDASCOPE_METRICS")
      ->check(FiniteRange(0, 3600, "s"));
  sub->add_option("--snapshot", options.snapshot,
                  "Record the allocator's history and dump a snapshot here (.pickle or .json, optionally .gz)")
      ->check(cudascope::cli::SnapshotFile());
  sub->callback([] { run_demo(options); });
}
