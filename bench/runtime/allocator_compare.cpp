// Same-run comparison of allocators on the GPU: cudascope's caching allocator, PyTorch's
// (libtorch, c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete) and cudaMallocAsync,
// on identical workloads. Prints a Markdown table of ns per operation and the ratios.
// Built only where find_package(Torch) succeeds; run with CUDASCOPE_BACKEND=cuda.
#include <cudascope/cuda.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace cuda = cudascope::cuda;

namespace {

struct Allocator {
  std::string name;
  std::function<void*(std::size_t)> alloc;
  std::function<void(void*)> free;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Best of 5 runs of `ops` operations, in ns per operation.
double best_ns(const std::function<void()>& run, std::size_t ops) {
  double best = 1e30;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, seconds_since(start) * 1e9 / static_cast<double>(ops));
  }
  return best;
}

double pair_ns(const Allocator& a, std::size_t size) {
  a.free(a.alloc(size));
  constexpr std::size_t kPairs = 200000;
  return best_ns([&] {
    for (std::size_t i = 0; i < kPairs; ++i) a.free(a.alloc(size));
  }, kPairs);
}

double mixed_ns(const Allocator& a) {
  std::mt19937_64 rng(42);
  std::vector<std::size_t> sizes(1 << 16);
  for (auto& s : sizes) s = (rng() % 4 == 0) ? (1 << 20) + rng() % (16 << 20) : 1 + rng() % 200000;
  constexpr std::size_t kOps = 400000;
  std::vector<void*> slots(64, nullptr);
  auto run = [&] {
    for (std::size_t i = 0; i < kOps; ++i) {
      const std::size_t slot = (i * 2654435761u) % slots.size();
      if (slots[slot]) {
        a.free(slots[slot]);
        slots[slot] = nullptr;
      } else {
        slots[slot] = a.alloc(sizes[i % sizes.size()]);
      }
    }
  };
  run();  // warm the cache
  return best_ns(run, kOps);
}

// 8 threads, each allocating and freeing; million operations per second, all threads.
double threads_mops(const Allocator& a) {
  constexpr std::size_t kPairs = 100000;
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::thread> threads;
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        c10::cuda::set_device(0);
        std::mt19937_64 rng(static_cast<std::uint64_t>(t));
        for (std::size_t i = 0; i < kPairs; ++i) a.free(a.alloc(512 + rng() % 65536));
      });
    }
    for (auto& t : threads) t.join();
    best = std::max(best, 8.0 * 2 * kPairs / seconds_since(start) / 1e6);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("CUDASCOPE_BACKEND", "cuda", 0);
  cuda::init();
  c10::cuda::CUDACachingAllocator::init(c10::cuda::device_count());
  c10::cuda::set_device(0);
  cudaStream_t stream = nullptr;
  cudaSetDevice(0);
  std::vector<Allocator> allocators = {
      {"cudascope", [](std::size_t n) { return cuda::caching_allocator_alloc(n); },
       [](void* p) { cuda::caching_allocator_delete(p); }},
      {"pytorch", [](std::size_t n) { return c10::cuda::CUDACachingAllocator::raw_alloc(n); },
       [](void* p) { c10::cuda::CUDACachingAllocator::raw_delete(p); }},
      {"cudaMallocAsync",
       [stream](std::size_t n) {
         void* p = nullptr;
         cudaMallocAsync(&p, n, stream);
         return p;
       },
       [stream](void* p) { cudaFreeAsync(p, stream); }},
  };
  // Let the async pool keep what it frees, as PyTorch's cudaMallocAsync backend does.
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  std::uint64_t threshold = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s\n\n", prop.name);
  std::printf("| workload | cudascope | PyTorch | cudaMallocAsync | cudascope / PyTorch | cudascope / cudaMallocAsync |\n");
  std::printf("|---|---|---|---|---|---|\n");
  auto row = [&](const std::string& name, double ours, double torch, double async, const char* unit) {
    std::printf("| %s | %.0f %s | %.0f %s | %.0f %s | %.2fx | %.2fx |\n", name.c_str(), ours, unit, torch, unit, async,
                unit, ours / torch, ours / async);
  };
  const std::pair<const char*, std::size_t> sizes[] = {
      {"512 B", 512}, {"4 KiB", 4 << 10}, {"1 MiB", 1 << 20}, {"8 MiB", 8 << 20}, {"64 MiB", 64 << 20}};
  for (const auto& [label, size] : sizes) {
    double r[3];
    for (int i = 0; i < 3; ++i) r[i] = pair_ns(allocators[i], size);
    row(std::string("malloc+free pair, ") + label, r[0], r[1], r[2], "ns");
  }
  {
    double r[3];
    for (int i = 0; i < 3; ++i) r[i] = mixed_ns(allocators[i]);
    row("mixed random workload, per op", r[0], r[1], r[2], "ns");
  }
  {
    double r[3];
    for (int i = 0; i < 3; ++i) r[i] = threads_mops(allocators[i]);
    std::printf("| 8 threads, throughput | %.2f Mop/s | %.2f Mop/s | %.2f Mop/s | %.2fx | %.2fx |\n", r[0], r[1], r[2],
                r[0] / r[1], r[0] / r[2]);
  }
  std::printf("\n| history (cudascope, 4 KiB pair) | ns | vs off |\n|---|---|---|\n");
  double off = 0;
  for (int mode = 0; mode < 3; ++mode) {
    if (mode == 0) cuda::memory::record_memory_history(std::nullopt);
    if (mode == 1) cuda::memory::record_memory_history("all", "all", "python", 100000);
    if (mode == 2) cuda::memory::record_memory_history("all", "all", "all", 100000);
    const double ns = pair_ns(allocators[0], 4096);
    if (mode == 0) off = ns;
    std::printf("| %s | %.0f | %.2fx |\n", mode == 0 ? "off" : mode == 1 ? "on, no stacks" : "on, C++ stacks", ns,
                ns / off);
  }
  // memory_snapshot() with 100,000 history entries (with stacks).
  for (int i = 0; i < 40000; ++i) cuda::caching_allocator_delete(cuda::caching_allocator_alloc(512 + i % 4096));
  double best = 1e30;
  std::size_t entries = 0;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto snap = cuda::memory::memory_snapshot();
    best = std::min(best, seconds_since(start) * 1e3);
    entries = snap.device_traces[0].size();
  }
  std::printf("\nmemory_snapshot() with %zu history entries (C++ stacks): %.1f ms\n", entries, best);
  cuda::memory::record_memory_history(std::nullopt);
  if (argc > 1) {
    // A small snapshot with history, NVTX metadata and a pending free, for PyTorch's tools.
    cuda::memory::record_memory_history("all", "all", "all", 1000);
    std::vector<void*> keep;
    {
      cuda::nvtx::Range step("step 0");
      for (std::size_t size : {512ul, 4096ul, 1ul << 20, 3ul << 20, 30ul << 20}) keep.push_back(cuda::caching_allocator_alloc(size));
      cuda::caching_allocator_delete(keep.back());
      keep.pop_back();
    }
    cuda::memory::dump_snapshot(argv[1]);
    for (void* p : keep) cuda::caching_allocator_delete(p);
    std::printf("snapshot written to %s\n", argv[1]);
  }
  return 0;
}
