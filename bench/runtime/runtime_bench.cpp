// Runtime overheads against the raw CUDA calls they wrap, in the same run.
// Run: CUDASCOPE_BACKEND=cuda runtime_bench (raw CUDA rows need the cuda backend and a GPU).
#include <cudascope/cuda.h>

#include <benchmark/benchmark.h>

#ifdef CUDASCOPE_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cstdlib>

namespace cuda = cudascope::cuda;

namespace {

bool skip_without_device(benchmark::State& state) {
  if (cuda::is_available()) return false;
  state.SkipWithError("no device on this backend");
  return true;
}

void BM_EventRecordQuery(benchmark::State& state) {
  if (skip_without_device(state)) return;
  cuda::Stream stream;
  cuda::Event event;
  for (auto _ : state) {
    event.record(stream);
    benchmark::DoNotOptimize(event.query());
  }
  stream.synchronize();
}
BENCHMARK(BM_EventRecordQuery);

void BM_CurrentStream(benchmark::State& state) {
  if (skip_without_device(state)) return;
  for (auto _ : state) benchmark::DoNotOptimize(cuda::current_stream());
}
BENCHMARK(BM_CurrentStream);

void BM_DeviceGuardSameDevice(benchmark::State& state) {
  if (skip_without_device(state)) return;
  for (auto _ : state) {
    cuda::DeviceGuard guard(0);
    benchmark::DoNotOptimize(&guard);
  }
}
BENCHMARK(BM_DeviceGuardSameDevice);

void BM_DeviceGuardSwitch(benchmark::State& state) {
  if (skip_without_device(state)) return;
  if (cuda::device_count() < 2) {
    state.SkipWithError("needs two devices");
    return;
  }
  for (auto _ : state) {
    cuda::DeviceGuard guard(1);
    benchmark::DoNotOptimize(&guard);
  }
}
BENCHMARK(BM_DeviceGuardSwitch);

#ifdef CUDASCOPE_HAVE_CUDA
bool skip_without_cuda(benchmark::State& state) {
  if (cuda::backend_name() == "cuda" && cuda::is_available()) return false;
  state.SkipWithError("raw CUDA rows need CUDASCOPE_BACKEND=cuda and a GPU");
  return true;
}

void BM_RawCudaEventRecordQuery(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t event = nullptr;
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  for (auto _ : state) {
    cudaEventRecord(event, stream);
    benchmark::DoNotOptimize(cudaEventQuery(event));
  }
  cudaStreamSynchronize(stream);
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
}
BENCHMARK(BM_RawCudaEventRecordQuery);

// What a current-stream lookup must at least do with the raw API: ask for the device.
void BM_RawCudaGetDevice(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  int device = 0;
  for (auto _ : state) {
    cudaGetDevice(&device);
    benchmark::DoNotOptimize(device);
  }
}
BENCHMARK(BM_RawCudaGetDevice);

// A device guard with the raw API: get, set, set back.
void BM_RawCudaDeviceSwitchSameDevice(benchmark::State& state) {
  if (skip_without_cuda(state)) return;
  int device = 0;
  for (auto _ : state) {
    cudaGetDevice(&device);
    cudaSetDevice(0);
    cudaSetDevice(device);
  }
}
BENCHMARK(BM_RawCudaDeviceSwitchSameDevice);
#endif

}  // namespace

int main(int argc, char** argv) {
  setenv("CUDASCOPE_BACKEND", "auto", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
