#pragma once
// torch.cuda.comm: collectives between the devices of one process, on Tensors, through peer
// copies (each copy ordered after the work queued on both devices' current streams, as
// Tensor::copy_ does) and the runtime's own add kernel. No NCCL.
//
// Thread-safety: as Tensor: the inputs must not be written meanwhile.

#include <cudascope/cuda/stream.h>
#include <cudascope/cuda/tensor.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cudascope::cuda::comm {

// A copy of `tensor` on each of `devices` (the input itself where it already lives there).
std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<int>& devices);
// broadcast() of several tensors, packed into flat buckets of at most `buffer_size` bytes of
// one dtype so small tensors travel in few copies; result[d][i] is tensors[i] on devices[d].
std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors, const std::vector<int>& devices,
                                                     std::size_t buffer_size = 10485760);
// The element-wise sum of `inputs` (same dtype and sizes, any devices) on `destination`
// (-1: the current device).
Tensor reduce_add(const std::vector<Tensor>& inputs, int destination = -1);
// Splits `tensor` along `dim` into one piece per device (equal chunks as Tensor::chunk, or
// `chunk_sizes` summing to the dimension's size) and copies piece i to devices[i], on
// streams[i] when given (one per device).
std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<int>& devices,
                            const std::vector<std::int64_t>& chunk_sizes = {}, int dim = 0,
                            const std::vector<Stream>& streams = {});
// Concatenates `tensors` (one per device, same sizes except along `dim`) on `destination`
// (default: the current CUDA device; Device::cpu() gathers on the host).
Tensor gather(const std::vector<Tensor>& tensors, int dim = 0, std::optional<Device> destination = std::nullopt);

}  // namespace cudascope::cuda::comm
