// The hooks torch.cuda.memory.CUDAPluggableAllocator calls. Each forwards to the runtime's
// process-wide caching allocator (cudascope/cuda/memory.h); errors become what PyTorch
// expects of its own allocator (see torch_errors.h).
#include "torch_allocator.h"

#include "last_error.h"
#include "nvtx_bridge.h"
#include "stream_cache.h"
#include "torch_errors.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#define CUDASCOPE_TORCH_EXPORT extern "C" __attribute__((visibility("default")))

namespace cudascope::torch_allocator {
namespace {

// PyTorch's message starts at "CUDA out of memory."; ours carries the runtime's error code, call
// and source location before it, which mean nothing to a PyTorch user.
std::string out_of_memory_message(const cuda::OutOfMemoryError& e) {
  const std::string what = e.what();
  const auto at = what.find("CUDA out of memory");
  return at == std::string::npos ? what : what.substr(at);
}

// A failure in a hook: raised for PyTorch, kept in last_error for C callers.
void fail(const std::exception& e) {
  if (torch_present()) throw;
  set_last_error(e.what());
}

}  // namespace
}  // namespace cudascope::torch_allocator

using namespace cudascope;
using namespace cudascope::torch_allocator;

CUDASCOPE_TORCH_EXPORT void* cudascope_torch_alloc(ssize_t size, int device, void* stream) {
  if (size <= 0) return nullptr;
  try {
    return with_borrowed_ranges(
        [&] { return cuda::caching_allocator_alloc(static_cast<std::size_t>(size), device, stream_of(stream, device)); });
  } catch (const cuda::OutOfMemoryError& e) {
    // CUDASCOPE_OOM_SNAPSHOT is already written (caching_allocator_alloc does it).
    if (torch_present()) throw_out_of_memory(out_of_memory_message(e));
    set_last_error(out_of_memory_message(e));
  } catch (const std::exception& e) {
    fail(e);
  }
  return nullptr;
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_free(void* ptr, ssize_t /*size*/, int device, void* /*stream*/) {
  try {
    with_borrowed_ranges([&] { cuda::caching_allocator_delete(ptr, device); });
  } catch (const std::exception& e) {
    // PyTorch frees from destructors: throwing would terminate the process.
    set_last_error(e.what());
    std::fprintf(stderr, "cudascope_torch_free: %s\n", e.what());
  }
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_init(int device_count) {
  clear_last_error();
  try {
    // Initialises the runtime now (its backend, CUDASCOPE_METRICS), not at the first tensor.
    const int ours = cuda::device_count();
    // The backward pass's blocks carry the loop's ranges in the default OOM history too.
    start_borrowing_with_default_history();
    if (ours != device_count) {
      std::fprintf(stderr, "cudascope_torch: PyTorch sees %d devices, cudascope's runtime %d\n", device_count, ours);
    }
  } catch (const std::exception& e) {
    fail(e);
  }
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_empty_cache(void) {
  clear_last_error();
  try {
    cuda::empty_cache();
  } catch (const std::exception& e) {
    fail(e);
  }
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_set_memory_fraction(double fraction, int device) {
  clear_last_error();
  try {
    cuda::set_per_process_memory_fraction(fraction, device);
  } catch (const std::exception& e) {
    fail(e);
  }
}

CUDASCOPE_TORCH_EXPORT void* cudascope_torch_base_alloc(void* ptr, size_t* size) {
  clear_last_error();
  try {
    const auto address = reinterpret_cast<std::uint64_t>(ptr);
    for (const cuda::memory::SegmentInfo& segment : cuda::memory::memory_snapshot().segments) {
      if (address >= segment.address && address < segment.address + segment.total_size) {
        if (size != nullptr) *size = segment.total_size;
        return reinterpret_cast<void*>(segment.address);
      }
    }
    throw std::invalid_argument("cudascope_torch_base_alloc: pointer " + std::to_string(address) +
                                " is not inside any segment of the caching allocator");
  } catch (const std::exception& e) {
    fail(e);
  }
  return ptr;
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_record_stream(void* ptr, void* stream) {
  clear_last_error();
  try {
    cuda::record_stream(ptr, stream_of(stream, device_of_stream(stream)));
  } catch (const std::exception& e) {
    fail(e);
  }
}

// CUDA graphs and torch.cuda.MemPool: PyTorch's CUDAGraph (and MemPool) tell the allocator
// which pool to serve a capture's streams from; cudascope's allocator keeps private pools as
// PyTorch's does (memory.h), so the hooks forward. stream_filter receives a cudaStream_t.
CUDASCOPE_TORCH_EXPORT void cudascope_torch_begin_allocate_to_pool(int device, cudascope_torch_pool_id pool,
                                                                   std::function<bool(void*)> stream_filter) {
  clear_last_error();
  try {
    cuda::memory::begin_allocate_to_pool(device, pool, std::move(stream_filter));
  } catch (const std::exception& e) {
    fail(e);
  }
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_end_allocate_to_pool(int device, cudascope_torch_pool_id pool) {
  clear_last_error();
  try {
    cuda::memory::end_allocate_to_pool(device, pool);
  } catch (const std::exception& e) {
    fail(e);
  }
}

CUDASCOPE_TORCH_EXPORT void cudascope_torch_release_pool(int device, cudascope_torch_pool_id pool) {
  clear_last_error();
  try {
    cuda::memory::release_pool(device, pool);
  } catch (const std::exception& e) {
    fail(e);
  }
}
