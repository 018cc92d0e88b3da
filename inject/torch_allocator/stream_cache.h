#pragma once
// PyTorch hands the allocator raw cudaStream_t handles; the runtime wants Streams (handle,
// device and the stream's id, which the CUDA driver is asked for). A job uses a handful of
// streams, so each thread keeps the last few it saw and asks the driver once per stream.

#include <cudascope/cuda/stream.h>

namespace cudascope::torch_allocator {

// The stream `handle` of `device` (nullptr: the device's default stream).
cuda::Stream stream_of(void* handle, int device);

// The device `handle` belongs to: asked of the CUDA driver when it is loaded (cuStreamGetDevice;
// for the default stream, the calling thread's current context), else the runtime's current
// device (the sim backend).
int device_of_stream(void* handle);

}  // namespace cudascope::torch_allocator
