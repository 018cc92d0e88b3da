#pragma once
// CUDA graphs and the device's default generator, as torch's CUDAGeneratorState: the first
// graph registered allocates the generator's seed and offset tensors on the device (two int64
// tensors, on the current stream, before the capture's private pool is in place); they are
// freed when the last registered graph is destroyed. Memory figures through a capture match
// PyTorch's for that reason; the graph-safe Philox offsets they serve torch for are not
// modelled (random kernels in a graph replay the numbers drawn at capture).
// Thread-safe.

namespace cudascope::cuda::detail::random {

// `graph` captures on `device` (registering the same graph twice counts once).
void register_graph(int device, const void* graph);
// `graph` is destroyed; a graph never registered is ignored.
void unregister_graph(int device, const void* graph);

}  // namespace cudascope::cuda::detail::random
