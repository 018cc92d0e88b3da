// NVTX push+pop cost. Run plain (no tool: NVTX's calls are no-ops after its first call) and
// with NVTX_INJECTION64_PATH=libcudascope_inject.so CUDASCOPE_TRACE=... (recording). A fixed
// iteration count keeps every record within the record buffers' memory, so nothing is
// dropped and the recording path is what is timed.
#include <benchmark/benchmark.h>

#include <nvtx3/nvToolsExt.h>

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

BENCHMARK_MAIN();
