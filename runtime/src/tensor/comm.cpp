// torch.cuda.comm on Tensors: peer copies and the add kernel.
#include "../check.h"
#include "../runtime_state.h"

#include <cudascope/cuda/comm.h>

#include <map>
#include <numeric>

namespace cudascope::cuda::comm {
namespace {

Device on(int device) { return Device::cuda(detail::resolve_device(device)); }

}  // namespace

std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<int>& devices) {
  CUDASCOPE_CHECK(tensor.defined() && !devices.empty(), error_code::kInvalidValue, "comm::broadcast",
                  "broadcast needs a tensor and at least one device");
  std::vector<Tensor> out;
  for (int device : devices) out.push_back(tensor.to(on(device)));
  return out;
}

std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors, const std::vector<int>& devices,
                                                     std::size_t buffer_size) {
  CUDASCOPE_CHECK(!devices.empty(), error_code::kInvalidValue, "comm::broadcast_coalesced", "no devices");
  std::vector<std::vector<Tensor>> out(devices.size(), std::vector<Tensor>(tensors.size()));
  // Buckets: consecutive tensors of one dtype and device up to buffer_size bytes (a larger
  // tensor gets a bucket of its own).
  std::size_t start = 0;
  while (start < tensors.size()) {
    std::size_t end = start;
    std::size_t bytes = 0;
    while (end < tensors.size() && tensors[end].dtype() == tensors[start].dtype() &&
           tensors[end].device() == tensors[start].device() &&
           (end == start || bytes + tensors[end].nbytes() <= buffer_size)) {
      bytes += tensors[end].nbytes();
      ++end;
    }
    std::vector<Tensor> flat;
    for (std::size_t i = start; i < end; ++i) flat.push_back(tensors[i].contiguous().view({tensors[i].numel()}));
    const Tensor bucket = cat(flat, 0);
    const std::vector<Tensor> copies = broadcast(bucket, devices);
    for (std::size_t d = 0; d < devices.size(); ++d) {
      std::int64_t offset = 0;
      for (std::size_t i = start; i < end; ++i) {
        out[d][i] = copies[d].narrow(0, offset, tensors[i].numel()).view(tensors[i].sizes());
        offset += tensors[i].numel();
      }
    }
    start = end;
  }
  return out;
}

Tensor reduce_add(const std::vector<Tensor>& inputs, int destination) {
  CUDASCOPE_CHECK(!inputs.empty(), error_code::kInvalidValue, "comm::reduce_add", "reduce_add needs at least one input");
  const Device target = on(destination);
  for (const Tensor& t : inputs) {
    CUDASCOPE_CHECK(t.dtype() == inputs.front().dtype() && t.sizes() == inputs.front().sizes(), error_code::kInvalidValue,
                    "comm::reduce_add", "inputs must have the same dtype and sizes");
  }
  // The input already on the destination (if any) is the first addend: one copy fewer.
  std::size_t first = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].device() == target) {
      first = i;
      break;
    }
  }
  // A fresh result, never one of the inputs.
  Tensor total = empty(inputs[first].sizes(), TensorOptions{}.with_dtype(inputs[first].dtype()).with_device(target));
  total.copy_(inputs[first]);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i != first) total = total.add(inputs[i].to(target));
  }
  return total;
}

std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<int>& devices,
                            const std::vector<std::int64_t>& chunk_sizes, int dim, const std::vector<Stream>& streams) {
  CUDASCOPE_CHECK(tensor.defined() && !devices.empty(), error_code::kInvalidValue, "comm::scatter",
                  "scatter needs a tensor and at least one device");
  CUDASCOPE_CHECK(streams.empty() || streams.size() == devices.size(), error_code::kInvalidValue, "comm::scatter",
                  "streams must give one stream per device");
  std::vector<Tensor> pieces;
  if (chunk_sizes.empty()) {
    pieces = tensor.chunk(static_cast<std::int64_t>(devices.size()), dim);
  } else {
    const int d = dim < 0 ? static_cast<int>(dim + tensor.dim()) : dim;
    const std::int64_t total = std::accumulate(chunk_sizes.begin(), chunk_sizes.end(), std::int64_t{0});
    CUDASCOPE_CHECK(chunk_sizes.size() == devices.size() && total == tensor.size(d), error_code::kInvalidValue,
                    "comm::scatter",
                    "chunk_sizes must give one size per device and sum to " + std::to_string(tensor.size(d)));
    std::int64_t start = 0;
    for (std::int64_t size : chunk_sizes) {
      pieces.push_back(tensor.narrow(d, start, size));
      start += size;
    }
  }
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Device target = on(devices[i]);
    if (streams.empty()) {
      out.push_back(pieces[i].to(target));
      continue;
    }
    CUDASCOPE_CHECK(streams[i].device_index() == target.index, error_code::kInvalidValue, "comm::scatter",
                    "stream " + std::to_string(i) + " is not on device " + std::to_string(target.index));
    // The copy runs on the given stream, which first waits for the current one (the source
    // may have been written there).
    streams[i].wait_stream(current_stream(target.index));
    StreamGuard guard(streams[i]);
    out.push_back(pieces[i].to(target));
  }
  return out;
}

Tensor gather(const std::vector<Tensor>& tensors, int dim, std::optional<Device> destination) {
  CUDASCOPE_CHECK(!tensors.empty(), error_code::kInvalidValue, "comm::gather", "gather needs at least one tensor");
  const Device target = destination.has_value() && destination->is_cpu() ? Device::cpu()
                                                                         : on(destination ? destination->index : -1);
  std::vector<Tensor> local;
  for (const Tensor& t : tensors) local.push_back(t.to(target));
  return cat(local, dim);
}

}  // namespace cudascope::cuda::comm
