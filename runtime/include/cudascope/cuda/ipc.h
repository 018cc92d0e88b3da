#pragma once
// CUDA IPC memory: a tensor's device memory shared with another process, as torch's
// multiprocessing shares CUDA tensors (storage._share_cuda_ / _new_shared_cuda).
//
// The producer shares the segment (one cudaMalloc) that holds the tensor's block: the
// handle names the segment (cudaIpcGetMemHandle of its base) and the storage's offset in it.
// Each share takes a reference-counter slot in a POSIX shared-memory file the producer owns
// (set to 1) and records an interprocess event on the producer's current stream. The
// consumer waits on that event, opens the segment (cudaIpcOpenMemHandle, once per handle
// while any tensor uses it) and, when its last tensor on the memory goes, synchronises its
// current stream and decrements the counter. The producer's block is not returned to the
// caching allocator while a counter it handed out is above zero: a producer tensor freed
// before then waits in a limbo that ipc_collect() (and every later release, and the caching
// allocator when a request misses its cache) empties, as torch's CudaIPCSentData /
// CudaIPCSentDataLimbo and its free-memory callback.
//
// On the sim backend a shared segment is moved, in place, into POSIX shared memory, which
// the consumer maps into its own simulated device; so the same code runs end to end.
//
// Limits (as CUDA and torch): a process cannot open its own handles; blocks of expandable
// segments and memory from the cudaMallocAsync or pluggable allocators cannot be shared.
// Thread-safety: every function is thread-safe.

#include <cudascope/cuda/event.h>
#include <cudascope/cuda/tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::cuda {

// cudaIpcMemHandle_t's 64 bytes.
using IpcMemHandle = std::array<std::uint8_t, 64>;

// What another process needs to open a shared tensor: torch's storage._share_cuda_() tuple
// plus the tensor's view of its storage.
struct SharedTensorHandle {
  int device = 0;
  IpcMemHandle mem_handle{};               // of the segment holding the storage
  std::uint64_t segment_size_bytes = 0;    // the whole segment's (the storage must lie in it)
  std::uint64_t storage_offset_bytes = 0;  // from the segment's base to the storage
  std::uint64_t storage_size_bytes = 0;
  std::string ref_counter_handle;          // shared-memory name of the counters file
  std::uint64_t ref_counter_offset = 0;    // this share's slot in it
  IpcEventHandle event_handle{};           // recorded after the producer's queued work
  bool event_sync_required = false;        // false: the producer synchronised instead
  DType dtype = DType::kFloat32;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t storage_offset = 0;         // in elements, as Tensor::storage_offset

  // One line of printable text (for a pipe, a file or a command line); parse() reads it
  // back and throws cuda::Error (kInvalidValue) naming the field it could not read, a field
  // given twice or one it does not know. parse() checks the text's form only: whether the
  // values describe a view of the segment is checked by open_shared_tensor.
  std::string serialize() const;
  static SharedTensorHandle parse(std::string_view text);
};

// Shares a CUDA tensor's memory (torch: storage._share_cuda_()). Throws cuda::Error for a
// CPU or empty tensor, and for memory that cannot be shared (see above).
SharedTensorHandle share_tensor(const Tensor& tensor);

// Opens a tensor another process shared (torch: _new_shared_cuda). The returned tensor
// reads and writes the producer's memory; work on it is queued on the current stream of
// handle.device, which first waits for the producer's event. Before any device work it
// throws cuda::Error (kInvalidValue) naming what is wrong when the handle cannot describe a
// view of the shared segment: negative sizes, strides or offsets, an unknown dtype, an
// element count or extent that overflows, a view past its storage or a storage past its
// segment, a malformed counter name or slot.
Tensor open_shared_tensor(const SharedTensorHandle& handle);

// torch.cuda.ipc_collect(): returns to the caching allocator the shared blocks that the
// producer no longer uses and that every consumer has released, and removes the counters
// file when no counter in it is in use. True when a block was returned.
bool ipc_collect();

// What IPC holds in this process.
struct IpcStats {
  std::size_t lent_blocks = 0;       // producer: shared blocks whose storage is still in use
  std::size_t limbo_blocks = 0;      // producer: freed by the producer, awaiting consumers
  std::size_t counters_in_use = 0;   // producer: counter slots handed out and not returned
  std::size_t counter_files = 0;     // producer: shared-memory counters files open
  std::size_t open_mem_handles = 0;  // consumer: other processes' segments mapped here
};
IpcStats ipc_stats();

}  // namespace cudascope::cuda
