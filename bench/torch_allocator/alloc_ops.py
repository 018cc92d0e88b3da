"""Allocator cost per operation under PyTorch's allocator or cudascope's, measured in C++ (a
small extension built with torch.utils.cpp_extension): malloc+free pairs of one size and a
mixed random workload with a window of live blocks, both through PyTorch's allocator entry
points (c10::cuda::CUDACachingAllocator::raw_alloc_with_stream / raw_delete: what a tensor
allocation costs, PyTorch's pluggable wrapper included) and, for cudascope, through the
library's hooks directly. Prints one JSON line.

  python3 alloc_ops.py --allocator cudascope
"""

import argparse
import ctypes
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import use_allocator  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--allocator", required=True, choices=["pytorch", "cudascope"])
parser.add_argument("--build-dir", default="/tmp/cudascope_alloc_ops_ext")
args = parser.parse_args()

import torch  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402

use_allocator(args.allocator)

SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

namespace A = c10::cuda::CUDACachingAllocator;
using Clock = std::chrono::steady_clock;
using AllocFn = void* (*)(ssize_t, int, void*);
using FreeFn = void (*)(void*, ssize_t, int, void*);

struct Op { int64_t slot; int64_t size; };

// A window of `live` slots; each op frees the slot's block and allocates a new size there.
// Sizes: 70% small (512 B - 1 MiB), 30% large (1 - 32 MiB), log-uniform.
static std::vector<Op> mixed_ops(int64_t n, int64_t live, int64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Op> ops;
  for (int64_t i = 0; i < n; ++i) {
    const bool small = u(rng) < 0.7;
    const double lo = small ? 9 : 20, hi = small ? 20 : 25;
    ops.push_back({static_cast<int64_t>(rng() % live), static_cast<int64_t>(std::exp2(lo + (hi - lo) * u(rng)))});
  }
  return ops;
}

template <typename Alloc, typename Free>
static double time_pairs(Alloc alloc, Free free, int64_t size, int64_t n) {
  for (int i = 0; i < 2000; ++i) free(alloc(size), size);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) free(alloc(size), size);
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
}

template <typename Alloc, typename Free>
static double time_mixed(Alloc alloc, Free free, int64_t n, int64_t live, int64_t seed) {
  const std::vector<Op> ops = mixed_ops(n, live, seed);
  std::vector<std::pair<void*, int64_t>> slots(live, {nullptr, 0});
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {  // the first round warms the cache
    const auto t0 = Clock::now();
    for (const Op& op : ops) {
      auto& s = slots[op.slot];
      if (s.first) free(s.first, s.second);
      s = {alloc(op.size), op.size};
    }
    const double per_op = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
    if (round > 0 && per_op < best) best = per_op;
  }
  for (auto& s : slots) if (s.first) free(s.first, s.second);
  return best;
}

static cudaStream_t stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

double torch_pairs(int64_t size, int64_t n) {
  cudaStream_t s = stream();
  return time_pairs([&](int64_t b) { return A::raw_alloc_with_stream(b, s); }, [](void* p, int64_t) { A::raw_delete(p); }, size, n);
}
double torch_mixed(int64_t n, int64_t live, int64_t seed) {
  cudaStream_t s = stream();
  return time_mixed([&](int64_t b) { return A::raw_alloc_with_stream(b, s); }, [](void* p, int64_t) { A::raw_delete(p); }, n, live, seed);
}
double hook_pairs(int64_t alloc_fn, int64_t free_fn, int64_t size, int64_t n) {
  auto a = reinterpret_cast<AllocFn>(alloc_fn); auto f = reinterpret_cast<FreeFn>(free_fn); void* s = stream();
  return time_pairs([&](int64_t b) { return a(b, 0, s); }, [&](void* p, int64_t b) { f(p, b, 0, s); }, size, n);
}
double hook_mixed(int64_t alloc_fn, int64_t free_fn, int64_t n, int64_t live, int64_t seed) {
  auto a = reinterpret_cast<AllocFn>(alloc_fn); auto f = reinterpret_cast<FreeFn>(free_fn); void* s = stream();
  return time_mixed([&](int64_t b) { return a(b, 0, s); }, [&](void* p, int64_t b) { f(p, b, 0, s); }, n, live, seed);
}
"""

os.makedirs(args.build_dir, exist_ok=True)
ext = load_inline("cudascope_alloc_ops", cpp_sources=SOURCE, with_cuda=True, build_directory=args.build_dir,
                  functions=["torch_pairs", "torch_mixed", "hook_pairs", "hook_mixed"], extra_cflags=["-O2"])

torch.ones(1, device="cuda")  # CUDA up, the allocator in use
N, LIVE, SEED = 200000, 256, 7
result = {"allocator": args.allocator, "through_pytorch": {}, "through_hooks": {}}
for size, label in ((512, "pair_512B"), (1 << 20, "pair_1MiB"), (8 << 20, "pair_8MiB")):
    result["through_pytorch"][label] = ext.torch_pairs(size, N)
result["through_pytorch"]["mixed_per_op"] = ext.torch_mixed(N, LIVE, SEED)
if args.allocator == "cudascope":
    import cudascope_torch
    lib = ctypes.CDLL(cudascope_torch.library_path())
    a = ctypes.cast(lib.cudascope_torch_alloc, ctypes.c_void_p).value
    f = ctypes.cast(lib.cudascope_torch_free, ctypes.c_void_p).value
    for size, label in ((512, "pair_512B"), (1 << 20, "pair_1MiB"), (8 << 20, "pair_8MiB")):
        result["through_hooks"][label] = ext.hook_pairs(a, f, size, N)
    result["through_hooks"]["mixed_per_op"] = ext.hook_mixed(a, f, N, LIVE, SEED)
print(json.dumps(result))
