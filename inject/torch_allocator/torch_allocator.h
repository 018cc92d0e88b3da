#pragma once
// libcudascope_torch_allocator.so: cudascope's caching allocator (PyTorch's algorithm and
// statistics, see cudascope/cuda/memory.h) as PyTorch's pluggable CUDA allocator.
//
//   alloc = torch.cuda.memory.CUDAPluggableAllocator(path, "cudascope_torch_alloc", "cudascope_torch_free")
//   torch.cuda.memory.change_current_allocator(alloc)
//
// cudascope_torch.py (installed beside the library) does this and registers the optional
// hooks below; it also reads the figures PyTorch cannot ask a pluggable allocator for.
//
// Configuration comes from the environment, read at the first allocation:
// CUDASCOPE_ALLOC_CONF (else PYTORCH_CUDA_ALLOC_CONF), CUDASCOPE_METRICS=address:port (a
// Prometheus endpoint for this process), CUDASCOPE_OOM_SNAPSHOT=path (a snapshot written when
// an allocation fails, with the allocator's history, on from the first allocation; see
// record_memory_history in cudascope/cuda/memory.h for CUDASCOPE_OOM_HISTORY=stacks|off),
// CUDASCOPE_BACKEND (cuda by default; sim for tests without a GPU).
//
// Errors: PyTorch's pluggable allocator does not check what alloc returns (NULL would become a
// tensor without memory), so in a PyTorch process the hooks (alloc ... release_pool) raise C++
// exceptions: an out-of-memory raises c10::OutOfMemoryError, which Python sees as
// torch.OutOfMemoryError; other failures std::exceptions (RuntimeError). A PyTorch process is
// one where cudascope_torch_bind_torch was called or libc10 is found loaded. Elsewhere (C
// callers, ctypes) the hooks report failures as the C functions below do: they never throw,
// return an error value and leave the message in cudascope_torch_last_error. free never throws.
// Thread-safety: every function is thread-safe.

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
#include <functional>
#include <utility>
extern "C" {
#endif

// --- The hooks of torch.cuda.memory.CUDAPluggableAllocator (torch/csrc/cuda/CUDAPluggableAllocator.h).

// alloc_fn: `size` bytes on `device` for use on `stream` (a cudaStream_t). Size 0 gives NULL,
// as PyTorch's allocator does. Out of memory: writes CUDASCOPE_OOM_SNAPSHOT when set, then
// throws c10::OutOfMemoryError (in a PyTorch process) or returns NULL (elsewhere).
void* cudascope_torch_alloc(ssize_t size, int device, void* stream);
// free_fn: returns `ptr` to the cache. Never throws (PyTorch frees from destructors): a
// pointer the allocator does not own is reported on stderr and left alone.
void cudascope_torch_free(void* ptr, ssize_t size, int device, void* stream);
// init_fn: called by PyTorch's CUDA initialisation with the device count. Starts the runtime
// (and with it CUDASCOPE_METRICS) before the first allocation.
void cudascope_torch_init(int device_count);
// reset_fn: torch.cuda.empty_cache().
void cudascope_torch_empty_cache(void);
// memory_fraction_fn: torch.cuda.set_per_process_memory_fraction(fraction, device).
void cudascope_torch_set_memory_fraction(double fraction, int device);
// base_alloc_fn: the start of the segment holding `ptr`, its size in *size. Used only by
// PyTorch's IPC paths; walks the allocator's segments.
void* cudascope_torch_base_alloc(void* ptr, size_t* size);
// record_stream_fn: Tensor.record_stream(stream): the block is not reused until the work
// queued on `stream` when it is freed has completed.
void cudascope_torch_record_stream(void* ptr, void* stream);

#ifdef __cplusplus
// The CUDA-graph pool hooks (set_begin_allocate_to_pool, set_end_allocate_to_pool_fn,
// set_release_pool): PyTorch's beginAllocateToPool / endAllocateToPool / releasePool, served
// by cudascope's private pools (memory.h), for torch.cuda.graph, CUDAGraph.capture_begin,
// torch.compile's cudagraphs and torch.cuda.MemPool. stream_filter receives a cudaStream_t.
using cudascope_torch_pool_id = std::pair<unsigned long long, unsigned long long>;
void cudascope_torch_begin_allocate_to_pool(int device, cudascope_torch_pool_id pool,
                                            std::function<bool(void*)> stream_filter);
void cudascope_torch_end_allocate_to_pool(int device, cudascope_torch_pool_id pool);
void cudascope_torch_release_pool(int device, cudascope_torch_pool_id pool);
#endif

// --- Figures and controls for the Python module (and any C caller).

// Resolves c10::OutOfMemoryError in the already loaded library at `library_path` (libc10.so
// of the running torch), so that the hooks raise the exception PyTorch raises. Returns 1 when
// bound, 0 when the library is not loaded or lacks the symbols (last_error says which).
int cudascope_torch_bind_torch(const char* library_path);
// memory_stats(device) as a JSON object {"key": value, ...} with PyTorch's keys, in a buffer
// from malloc (release with cudascope_torch_free_text); NULL on error.
char* cudascope_torch_memory_stats_json(int device);
// torch.cuda.memory_summary's table; malloc'd, NULL on error.
char* cudascope_torch_memory_summary(int device, int abbreviated);
void cudascope_torch_free_text(char* text);
// torch.cuda.memory._dump_snapshot(path): .json, .pickle/.pkl, optionally .gz. 0 or -1.
int cudascope_torch_dump_snapshot(const char* path);
// torch.cuda.memory._record_memory_history: enabled "all", "state" or NULL (stop); context
// "all", "alloc", "state" or NULL; stacks "python", "cpp" or "all". 0 or -1.
int cudascope_torch_record_memory_history(const char* enabled, const char* context, const char* stacks,
                                          size_t max_entries);
// torch.cuda.reset_peak_memory_stats(device). 0 or -1.
int cudascope_torch_reset_peak_memory_stats(int device);
// The calling thread's last error message ("" when none).
const char* cudascope_torch_last_error(void);

// NVTX_INJECTION64_PATH entry point: each NVTX instance of the process (PyTorch's
// torch.cuda.nvtx among them) hands its range push/pop here, and the allocator's history
// keeps the thread's open ranges with every allocation (user_metadata in the snapshot). A
// thread with none open (PyTorch's autograd thread) borrows those of the thread that last
// opened or closed one (see nvtx_bridge.h).
int InitializeInjectionNvtx2(const void* (*get_export_table)(unsigned int));
// The same for each NVTX extension module (an nvtxExtModuleInfo_t): the payload extension's
// range push and pop (NCCL ends its init calls' ranges with nvtxRangePopPayload) keep the
// thread's ranges paired.
int InitializeInjectionNvtxExtension(struct nvtxExtModuleInfo_t* module);

#ifdef __cplusplus
}  // extern "C"
#endif
