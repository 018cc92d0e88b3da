// NVTX push+pop cost. Run plain (no tool: NVTX's calls are no-ops after its first call) and
// with NVTX_INJECTION64_PATH=libcudascope_inject.so CUDASCOPE_TRACE=... (recording). A fixed
// iteration count keeps every record within the record buffers' memory, so nothing is
// dropped and the recording path is what is timed.
#include <benchmark/benchmark.h>

#include <nvtx3/nvToolsExt.h>

#include <time.h>

#include <chrono>
#include <cstdint>
#include <thread>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static void BM_NvtxPushPop(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("step");
    nvtxRangePop();
  }
}
BENCHMARK(BM_NvtxPushPop)->Iterations(150000)->Repetitions(5)->ReportAggregatesOnly(true);

static void BM_NvtxPushPopLongMessage(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("optimizer.step / AdamW / parameter group 0 / fused foreach update");
    nvtxRangePop();
  }
}
BENCHMARK(BM_NvtxPushPopLongMessage)->Iterations(40000)->Repetitions(5)->ReportAggregatesOnly(true);

// At a rate the writer thread keeps up with (bursts of 10,000 pairs, then 20 ms untimed for
// the writer to drain them), so chunks are recycled rather than touched for the first time.
// Reported per pair.
static void BM_NvtxPushPopSteady(benchmark::State& state) {
  constexpr int kBurst = 10000;
  for (auto _ : state) {
    for (int i = 0; i < kBurst; ++i) {
      nvtxRangePushA("step");
      nvtxRangePop();
    }
    state.PauseTiming();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  state.counters["ns_per_pair"] = benchmark::Counter(static_cast<double>(state.iterations() * kBurst),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_NvtxPushPopSteady)->Iterations(50)->Repetitions(5)->ReportAggregatesOnly(true)->UseRealTime();

// The two clocks a recorded push+pop reads twice (through the runtime's host_time_ns): the
// TSC where the runtime finds an invariant one, else CLOCK_MONOTONIC, whose cost depends on
// the machine's clock source and virtualisation. Tells a slow clock from a slow record path.
static void BM_ClockGettimeMonotonic(benchmark::State& state) {
  timespec now{};
  for (auto _ : state) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    benchmark::DoNotOptimize(now);
  }
}
BENCHMARK(BM_ClockGettimeMonotonic)->Iterations(200000)->Repetitions(3)->ReportAggregatesOnly(true);

#if defined(__x86_64__)
static void BM_Rdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__rdtsc());
}
BENCHMARK(BM_Rdtsc)->Iterations(200000)->Repetitions(3)->ReportAggregatesOnly(true);
#endif

BENCHMARK_MAIN();
