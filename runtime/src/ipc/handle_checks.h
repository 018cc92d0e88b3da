#pragma once
// What open_shared_tensor checks of a SharedTensorHandle before it touches the device: the
// handle may come from a pipe, a file or a command line, so nothing in it is trusted.

#include <cudascope/cuda/ipc.h>

namespace cudascope::cuda::detail::ipc {

// Throws cuda::Error (kInvalidValue) naming the field and its value when the handle cannot
// describe a view of shared memory: a negative device, size, stride or offset, sizes and
// strides of different lengths, an unknown dtype, an element count or byte extent that
// overflows 64 bits, a view past its storage, a storage past its segment, or a counter name
// or slot a producer cannot have handed out. Thread-safety: a pure function.
void check_handle(const SharedTensorHandle& handle);

}  // namespace cudascope::cuda::detail::ipc
