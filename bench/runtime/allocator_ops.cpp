// A fixed number of allocator operations and nothing else, for instruction counts:
//   valgrind --tool=callgrind allocator_ops pair 512 100000
//   valgrind --tool=callgrind allocator_ops mixed 100000
// Two runs with different counts give the cost per operation in steady state (their
// difference over the difference in operations), free of start-up work. The mixed
// workload is allocator_compare's: 64 slots, a quarter of the sizes 1-17 MiB, the rest
// 1-200 KB, each operation freeing a full slot or filling an empty one.
#include <cudascope/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace cuda = cudascope::cuda;

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "pair") == 0 && argc < 4)) {
    std::fprintf(stderr, "usage: allocator_ops pair SIZE COUNT | allocator_ops mixed COUNT\n");
    return 2;
  }
  setenv("CUDASCOPE_BACKEND", "sim", 0);
  if (std::strcmp(argv[1], "pair") == 0) {
    const std::size_t size = std::strtoull(argv[2], nullptr, 10);
    const std::size_t count = std::strtoull(argv[3], nullptr, 10);
    cuda::caching_allocator_delete(cuda::caching_allocator_alloc(size));  // cache it
    for (std::size_t i = 0; i < count; ++i) cuda::caching_allocator_delete(cuda::caching_allocator_alloc(size));
    return 0;
  }
  const std::size_t count = std::strtoull(argv[2], nullptr, 10);
  std::mt19937_64 rng(42);
  std::vector<std::size_t> sizes(1 << 16);
  for (auto& s : sizes) s = (rng() % 4 == 0) ? (1 << 20) + rng() % (16 << 20) : 1 + rng() % 200000;
  std::vector<void*> slots(64, nullptr);
  // One pass over the sizes first, so that the counted operations find the cache warm.
  for (std::size_t i = 0; i < sizes.size() + count; ++i) {
    const std::size_t slot = (i * 2654435761u) % slots.size();
    if (slots[slot] != nullptr) {
      cuda::caching_allocator_delete(slots[slot]);
      slots[slot] = nullptr;
    } else {
      slots[slot] = cuda::caching_allocator_alloc(sizes[i % sizes.size()]);
    }
  }
  for (void* p : slots) cuda::caching_allocator_delete(p);
  return 0;
}
