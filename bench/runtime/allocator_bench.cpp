// Caching allocator micro-benchmarks (Google Benchmark): malloc+free pairs of cached sizes,
// a mixed random workload, 8 threads, history off/on/with stacks, and memory_snapshot()
// with 100,000 history entries. The ratios against PyTorch's allocator and
// cudaMallocAsync come from allocator_compare (built where libtorch is found).
// Run: CUDASCOPE_BACKEND=cuda allocator_bench (sim by default elsewhere).
#include <cudascope/cuda.h>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>
#include <vector>

namespace cuda = cudascope::cuda;

namespace {

void BM_CachedPair(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  cuda::caching_allocator_delete(cuda::caching_allocator_alloc(size));  // cache it
  for (auto _ : state) {
    void* p = cuda::caching_allocator_alloc(size);
    benchmark::DoNotOptimize(p);
    cuda::caching_allocator_delete(p);
  }
}
BENCHMARK(BM_CachedPair)->Arg(512)->Arg(4 << 10)->Arg(1 << 20)->Arg(8 << 20)->Arg(64 << 20);

// 64 slots; each operation frees a full slot or fills an empty one with a random size.
void BM_MixedWorkload(benchmark::State& state) {
  std::mt19937_64 rng(42);
  std::vector<std::size_t> sizes(1 << 16);
  for (auto& s : sizes) s = (rng() % 4 == 0) ? (1 << 20) + rng() % (16 << 20) : 1 + rng() % 200000;
  std::vector<void*> slots(64, nullptr);
  std::size_t i = 0;
  for (auto _ : state) {
    const std::size_t slot = (i * 2654435761u) % slots.size();
    if (slots[slot]) {
      cuda::caching_allocator_delete(slots[slot]);
      slots[slot] = nullptr;
    } else {
      slots[slot] = cuda::caching_allocator_alloc(sizes[i % sizes.size()]);
    }
    ++i;
  }
  for (void* p : slots) cuda::caching_allocator_delete(p);
}
BENCHMARK(BM_MixedWorkload);

void BM_Threads(benchmark::State& state) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(state.thread_index()));
  for (auto _ : state) {
    void* p = cuda::caching_allocator_alloc(512 + rng() % 65536);
    cuda::caching_allocator_delete(p);
  }
}
BENCHMARK(BM_Threads)->Threads(8)->UseRealTime();

void BM_HistoryPair(benchmark::State& state) {
  const char* modes[] = {"off", "python", "all"};
  const int mode = static_cast<int>(state.range(0));
  if (mode == 0) {
    cuda::memory::record_memory_history(std::nullopt);
  } else {
    cuda::memory::record_memory_history("all", "all", modes[mode], 100000);
  }
  state.SetLabel(mode == 0 ? "history off" : mode == 1 ? "history on" : "history on, C++ stacks");
  for (auto _ : state) {
    void* p = cuda::caching_allocator_alloc(4096);
    cuda::caching_allocator_delete(p);
  }
  cuda::memory::record_memory_history(std::nullopt);
}
BENCHMARK(BM_HistoryPair)->Arg(0)->Arg(1)->Arg(2);

void BM_SnapshotWith100kEntries(benchmark::State& state) {
  cuda::memory::record_memory_history("all", "all", "all", 100000);
  for (int i = 0; i < 40000; ++i) cuda::caching_allocator_delete(cuda::caching_allocator_alloc(512 + i % 4096));
  for (auto _ : state) {
    auto snap = cuda::memory::memory_snapshot();
    benchmark::DoNotOptimize(snap);
  }
  cuda::memory::record_memory_history(std::nullopt);
}
BENCHMARK(BM_SnapshotWith100kEntries)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  setenv("CUDASCOPE_BACKEND", "auto", 0);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
