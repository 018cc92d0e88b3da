// Same-run comparison of allocators on the GPU: cudascope's caching allocator, PyTorch's
// (libtorch, c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete) and cudaMallocAsync,
// on identical workloads. Prints a Markdown table of ns per operation and the ratios.
// Built as allocator_compare only where find_package(Torch) succeeds; run with
// CUDASCOPE_BACKEND=cuda.
//
// Then the cost of the allocator's history (record_memory_history), off against on without
// stacks and on with C++ stacks, in alternating rounds. Built alone, without libtorch, as
// allocator_history (CUDASCOPE_HISTORY_ONLY), which runs on the sim backend unless
// CUDASCOPE_BACKEND says otherwise: `allocator_history [ROUNDS [RING_ENTRIES]]`. For
// instruction counts, `allocator_history ops MODE PASSES` runs only the training-step mix in
// one mode (0 off, 1 no stacks, 2 C++ stacks, 3 C++ stacks of allocations only), and
// `allocator_history pairs MODE PASSES` only the 4 KiB pairs: two counts of passes under
// callgrind give the steady-state cost per operation.
#include <cudascope/cuda.h>

#ifndef CUDASCOPE_HISTORY_ONLY
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

#include <execinfo.h>
#include <unwind.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace cuda = cudascope::cuda;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

#ifndef CUDASCOPE_HISTORY_ONLY
struct Allocator {
  std::string name;
  std::function<void*(std::size_t)> alloc;
  std::function<void(void*)> free;
};

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

#endif  // CUDASCOPE_HISTORY_ONLY

// --- History: off, on without stacks, on with C++ stacks, in alternating rounds.

// A distinct call site per Site, Depth frames deep above the allocator, as a training
// step's allocations come from many places at framework depth. The empty asm after each
// call keeps the calls from becoming jumps, so every level is a real frame.
template <int Site, int Depth>
__attribute__((noinline)) void* alloc_at(std::size_t size) {
  void* p = nullptr;
  if constexpr (Depth == 0) {
    p = cuda::caching_allocator_alloc(size);
  } else {
    p = alloc_at<Site, Depth - 1>(size);
  }
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

template <int Site, int Depth>
__attribute__((noinline)) void free_at(void* p) {
  if constexpr (Depth == 0) {
    cuda::caching_allocator_delete(p);
  } else {
    free_at<Site, Depth - 1>(p);
  }
  asm volatile("" : : : "memory");
}

struct Site {
  void* (*alloc)(std::size_t);
  void (*free)(void*);
};
// Eight call sites, 6 to 27 frames above the allocator (plus the benchmark's own).
constexpr std::array<Site, 8> kSites = {{
    {alloc_at<0, 6>, free_at<0, 6>}, {alloc_at<1, 9>, free_at<1, 9>}, {alloc_at<2, 12>, free_at<2, 12>},
    {alloc_at<3, 15>, free_at<3, 15>}, {alloc_at<4, 18>, free_at<4, 18>}, {alloc_at<5, 21>, free_at<5, 21>},
    {alloc_at<6, 24>, free_at<6, 24>}, {alloc_at<7, 27>, free_at<7, 27>},
}};

struct Op {
  bool alloc;
  std::uint8_t site;
  std::uint32_t slot;
  std::size_t size;
};

// A training step's pattern: per layer, forward keeps an activation and makes and drops
// temporaries; backward, in reverse, makes gradient temporaries and drops the activation.
// Sizes are distinct per layer (log-uniform 512 B to 32 MiB, plus jitter), so blocks
// come from both pools, split and merge, at many addresses.
std::vector<Op> training_steps(int steps, int layers) {
  std::mt19937_64 rng(7);
  std::vector<std::size_t> base(static_cast<std::size_t>(layers));
  for (auto& b : base) b = static_cast<std::size_t>(std::exp2(9.0 + static_cast<double>(rng() % 1600) / 100.0));
  std::vector<Op> ops;
  auto site = [&] { return static_cast<std::uint8_t>(rng() % kSites.size()); };
  auto jitter = [&](std::size_t b) { return b + rng() % (b / 8 + 1); };
  const auto temp = static_cast<std::uint32_t>(layers);  // slots above the activations
  for (int s = 0; s < steps; ++s) {
    for (std::uint32_t l = 0; l < static_cast<std::uint32_t>(layers); ++l) {
      ops.push_back({true, site(), l, jitter(base[l])});
      for (std::uint32_t t = 0; t < 2; ++t) {
        ops.push_back({true, site(), temp + t, jitter(base[l] / 2 + 512)});
      }
      for (std::uint32_t t = 0; t < 2; ++t) ops.push_back({false, site(), temp + t, 0});
    }
    for (std::uint32_t l = static_cast<std::uint32_t>(layers); l-- > 0;) {
      ops.push_back({true, site(), temp, jitter(base[l])});
      ops.push_back({false, site(), l, 0});
      ops.push_back({true, site(), temp + 1, jitter(base[l] / 4 + 512)});
      ops.push_back({false, site(), temp + 1, 0});
      ops.push_back({false, site(), temp, 0});
    }
  }
  return ops;
}

// ns per allocator operation (an alloc or a free) over one pass of `ops`.
double run_ops(const std::vector<Op>& ops, std::vector<void*>& slots) {
  const auto start = std::chrono::steady_clock::now();
  for (const Op& op : ops) {
    const Site& s = kSites[op.site];
    if (op.alloc) {
      slots[op.slot] = s.alloc(op.size);
    } else {
      s.free(slots[op.slot]);
    }
  }
  return seconds_since(start) * 1e9 / static_cast<double>(ops.size());
}

// The workload: 4 KiB alloc+free pairs, here spread over the eight call sites.
double run_pairs(std::size_t pairs) {
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < pairs; ++i) {
    const Site& s = kSites[i % kSites.size()];
    s.free(s.alloc(4096));
  }
  return seconds_since(start) * 1e9 / static_cast<double>(2 * pairs);
}

enum HistoryMode { kOff, kNoStacks, kCppStacks, kCppStacksAllocOnly, kModes };
constexpr const char* kModeNames[kModes] = {"off", "on, no stacks", "on, C++ stacks",
                                            "on, C++ stacks of allocations only"};
std::size_t history_entries = 100000;  // the ring buffer's size

void set_mode(int mode) {
  if (mode == kOff) cuda::memory::record_memory_history(std::nullopt);
  if (mode == kNoStacks) cuda::memory::record_memory_history("all", "all", "python", history_entries);
  if (mode == kCppStacks) cuda::memory::record_memory_history("all", "all", "all", history_entries);
  if (mode == kCppStacksAllocOnly) cuda::memory::record_memory_history("all", "alloc", "all", history_entries);
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

// One workload in `rounds` rounds; each round runs every mode, in an order that rotates
// from round to round (so no mode always follows another), and each mode first runs one
// untimed pass, so the timed pass finds the cache warm and the ring buffer full
// (overwriting, as in a long job). Ratios are taken per round against that round's "off".
void history_rows(const char* name, const std::function<double()>& pass, int rounds) {
  std::vector<double> ns[kModes], ratio[kModes];
  for (int r = 0; r < rounds; ++r) {
    double round_ns[kModes];
    for (int i = 0; i < kModes; ++i) {
      const int mode = (r + i) % kModes;
      set_mode(mode);
      pass();
      round_ns[mode] = pass();
    }
    for (int m = 0; m < kModes; ++m) {
      ns[m].push_back(round_ns[m]);
      ratio[m].push_back(round_ns[m] / round_ns[kOff]);
    }
  }
  set_mode(kOff);
  for (int m = 0; m < kModes; ++m) {
    std::printf("| %s | %s | %.1f | %.1f-%.1f | %.3fx | %.3f-%.3fx |\n", name, kModeNames[m], percentile(ns[m], 0.5),
                percentile(ns[m], 0.25), percentile(ns[m], 0.75), percentile(ratio[m], 0.5),
                percentile(ratio[m], 0.25), percentile(ratio[m], 0.75));
  }
}

// What one stack capture costs with the unwinders that need no frame pointers, at a call
// site's depth (the allocator's history walks frame pointers; see history.cpp).
template <int Depth>
__attribute__((noinline)) double unwind_ns(int (*capture)(void**, int)) {
  if constexpr (Depth > 0) {
    const double ns = unwind_ns<Depth - 1>(capture);
    asm volatile("" : : : "memory");
    return ns;
  } else {
    void* frames[64];
    constexpr int kCalls = 20000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) {
      capture(frames, 64);
      asm volatile("" : : "r"(frames) : "memory");
    }
    return seconds_since(start) * 1e9 / kCalls;
  }
}

int unwind_backtrace(void** out, int max) {
  struct State {
    void** out;
    int depth, max;
  } state{out, 0, max};
  _Unwind_Backtrace(
      [](_Unwind_Context* context, void* arg) {
        auto* s = static_cast<State*>(arg);
        if (s->depth == s->max) return _URC_END_OF_STACK;
        s->out[s->depth++] = reinterpret_cast<void*>(_Unwind_GetIP(context));
        return _URC_NO_REASON;
      },
      &state);
  return state.depth;
}

// memory_snapshot() over a full ring of the training mix's records with C++ stacks: the
// symbolisation the hot path put off. Median of 5, in ms.
void snapshot_row(const std::vector<Op>& ops, std::vector<void*>& slots) {
  set_mode(kCppStacks);
  run_ops(ops, slots);
  std::vector<double> ms;
  std::size_t entries = 0;
  for (int r = 0; r < 5; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto snapshot = cuda::memory::memory_snapshot();
    ms.push_back(seconds_since(start) * 1e3);
    entries = snapshot.device_traces[0].size();
  }
  set_mode(kOff);
  std::printf("\nmemory_snapshot() with %zu history entries (C++ stacks): %.1f ms (median of 5)\n", entries,
              percentile(ms, 0.5));
}

void history_tables(int rounds) {
  std::printf("\nHistory: %d rounds, each running every mode (order rotating), an untimed pass then a\n"
              "timed one; ring buffer of %zu entries; ns per allocator operation (alloc or free):\n"
              "median and 25th-75th percentile; the ratio to off is per round, then its median.\n\n",
              rounds, history_entries);
  std::printf("| workload | history | ns/op | spread | vs off | spread |\n|---|---|---|---|---|---|\n");
  const std::vector<Op> ops = training_steps(400, 24);
  std::vector<void*> slots(64, nullptr);
  history_rows("training-step mix", [&] { return run_ops(ops, slots); }, rounds);
  history_rows("4 KiB pairs, 8 call sites", [] { return run_pairs(100000); }, rounds);
  snapshot_row(ops, slots);
  std::printf("\nOne stack capture, 24 frames above it, without frame pointers (ns per call):\n"
              "_Unwind_Backtrace %.0f, backtrace() %.0f\n",
              unwind_ns<24>(unwind_backtrace), unwind_ns<24>(backtrace));
}

}  // namespace

#ifdef CUDASCOPE_HISTORY_ONLY
int main(int argc, char** argv) {
  setenv("CUDASCOPE_BACKEND", "sim", 0);
  cuda::init();
  if (argc > 3 && std::string(argv[1]) == "ops") {
    const std::vector<Op> ops = training_steps(400, 24);
    std::vector<void*> slots(64, nullptr);
    set_mode(std::atoi(argv[2]));
    for (int pass = 0; pass <= std::atoi(argv[3]); ++pass) run_ops(ops, slots);  // one more: the warm-up
    std::printf("%zu operations per pass\n", ops.size());
    return 0;
  }
  if (argc > 3 && std::string(argv[1]) == "pairs") {
    constexpr std::size_t kPairs = 100000;
    set_mode(std::atoi(argv[2]));
    for (int pass = 0; pass <= std::atoi(argv[3]); ++pass) run_pairs(kPairs);
    std::printf("%zu operations per pass\n", 2 * kPairs);
    return 0;
  }
  if (argc > 2) history_entries = std::strtoull(argv[2], nullptr, 10);
  history_tables(argc > 1 ? std::atoi(argv[1]) : 31);
  return 0;
}
#else
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
  history_tables(31);
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
#endif  // CUDASCOPE_HISTORY_ONLY
