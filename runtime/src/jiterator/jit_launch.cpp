#include "jit_launch.h"

#include "../check.h"
#include "../runtime_state.h"
#include "../sanitizer/hooks.h"
#include "../tensor/storage.h"

#include <algorithm>
#include <array>
#include <string>

namespace cudascope::cuda::detail {
namespace {

constexpr const char* kCall = "cudascope::cuda::jiterator";

// One dimension of the iteration, with each operand's stride (outputs first).
struct IterDim {
  std::int64_t size = 1;
  std::array<std::int64_t, kJitMaxOperands> strides{};
};

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

int rank(DType dtype) {
  switch (dtype) {
    case DType::kBool: return 0;
    case DType::kUInt8: return 1;
    case DType::kInt32: return 2;
    case DType::kInt64: return 3;
    case DType::kFloat16:
    case DType::kBFloat16: return 4;
    case DType::kFloat32: return 5;
  }
  return 0;
}

// All defined CUDA tensors on one device; returns that device's index.
int common_device(const std::vector<Tensor>& inputs) {
  CUDASCOPE_CHECK(!inputs.empty() && inputs.size() <= static_cast<std::size_t>(kJitMaxInputs), error_code::kInvalidValue,
                  kCall, "a jiterator function takes 1 to 8 input tensors, not " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    CUDASCOPE_CHECK(t.defined() && t.is_cuda(), error_code::kInvalidValue, kCall,
                    "input " + std::to_string(i) + " must be a CUDA tensor, not " +
                        (t.defined() ? "one on " + t.device().str() : std::string("an undefined tensor")));
    CUDASCOPE_CHECK(t.device() == inputs[0].device(), error_code::kInvalidValue, kCall,
                    "expected all inputs on one device, but input " + std::to_string(i) + " is on " +
                        t.device().str() + " and input 0 on " + inputs[0].device().str());
  }
  return inputs[0].device().index;
}

std::vector<std::int64_t> broadcast_sizes(const std::vector<Tensor>& inputs) {
  std::size_t ndim = 0;
  for (const Tensor& t : inputs) ndim = std::max(ndim, t.sizes().size());
  std::vector<std::int64_t> sizes(ndim, 1);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& in = inputs[i].sizes();
    for (std::size_t d = 0; d < in.size(); ++d) {
      std::int64_t& out = sizes[ndim - in.size() + d];
      CUDASCOPE_CHECK(in[d] == out || in[d] == 1 || out == 1, error_code::kInvalidValue, kCall,
                      "input " + std::to_string(i) + " of sizes " + sizes_text(in) + " does not broadcast with " +
                          sizes_text(sizes) + " (dimension " + std::to_string(ndim - in.size() + d) + ")");
      if (out == 1) out = in[d];
    }
  }
  return sizes;
}

// The iteration's dimensions, outermost first: size-1 dimensions dropped, neighbours merged
// where every operand steps through them as through one (TensorIterator's coalescing).
std::vector<IterDim> iteration_dims(const std::vector<std::int64_t>& sizes, const std::vector<Tensor>& inputs,
                                    int outputs) {
  const std::vector<std::int64_t> out_strides = contiguous_strides(sizes);
  std::vector<IterDim> inner_first;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1) continue;
    IterDim dim;
    dim.size = sizes[d];
    for (int o = 0; o < outputs; ++o) dim.strides[static_cast<std::size_t>(o)] = out_strides[d];
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = inputs[i].sizes();
      const std::size_t lead = sizes.size() - in.size();
      const bool stretched = d < lead || in[d - lead] == 1;
      dim.strides[static_cast<std::size_t>(outputs) + i] = stretched ? 0 : inputs[i].strides()[d - lead];
    }
    if (!inner_first.empty()) {
      IterDim& inner = inner_first.back();
      bool mergeable = true;
      for (std::size_t k = 0; k < static_cast<std::size_t>(outputs) + inputs.size(); ++k) mergeable &= dim.strides[k] == inner.strides[k] * inner.size;
      if (mergeable) {
        inner.size *= dim.size;
        continue;
      }
    }
    inner_first.push_back(dim);
  }
  return {inner_first.rbegin(), inner_first.rend()};
}

JitKernel make_kernel(const JitProgram& program, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                      const std::vector<IterDim>& dims, const std::vector<double>& scalars) {
  JitKernel k;
  k.program = &program;
  for (const Tensor& t : inputs) k.inputs.push_back(t.dtype());
  k.output = outputs[0].dtype();
  const int operands = k.num_operands();
  k.contiguous = dims.size() <= 1;
  for (const IterDim& dim : dims) {
    for (int j = 0; j < operands; ++j) k.contiguous &= dim.strides[static_cast<std::size_t>(j)] == 1;
  }
  k.args.numel = outputs[0].numel();
  k.args.ndim = static_cast<std::int32_t>(dims.size());
  for (std::size_t o = 0; o < outputs.size(); ++o) k.args.data[o] = outputs[o].data_ptr();
  for (std::size_t i = 0; i < inputs.size(); ++i) k.args.data[outputs.size() + i] = inputs[i].data_ptr();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    k.args.sizes[d] = dims[d].size;
    for (int j = 0; j < operands; ++j) k.args.strides[j][d] = dims[d].strides[static_cast<std::size_t>(j)];
  }
  for (std::size_t s = 0; s < scalars.size(); ++s) k.args.scalars[s] = scalars[s];
  return k;
}

// The stream sanitizer (sanitizer.h) sees the call as one kernel reading the inputs and
// writing the outputs. Its records keep the names: static strings only.
void declare_accesses(int device, std::int64_t stream, const std::vector<Tensor>& inputs,
                      const std::vector<Tensor>& outputs) {
  if (!sanitizer::detail::active()) [[likely]] return;
  static constexpr std::array<const char*, kJitMaxInputs> kNames{"input 0", "input 1", "input 2", "input 3",
                                                                 "input 4", "input 5", "input 6", "input 7"};
  std::vector<sanitizer::detail::Operand> reads, writes;
  const auto storage_of = [](const Tensor& t) { return static_cast<const void*>(t.storage()->data()); };
  for (std::size_t i = 0; i < inputs.size(); ++i) reads.push_back({storage_of(inputs[i]), kNames[i]});
  for (const Tensor& t : outputs) writes.push_back({storage_of(t), nullptr});
  sanitizer::detail::kernel_launch(kCall, device, stream, reads, writes);
}

}  // namespace

DType promote_types(DType a, DType b) noexcept {
  if (a == b) return a;
  if (rank(a) == rank(b)) return DType::kFloat32;  // float16 with bfloat16
  return rank(a) > rank(b) ? a : b;
}

std::vector<Tensor> run_jit_program(const JitProgram& program, const std::vector<Tensor>& inputs,
                                    const std::vector<double>& scalars) {
  const int device = common_device(inputs);
  const std::vector<std::int64_t> sizes = broadcast_sizes(inputs);
  DType dtype = inputs[0].dtype();
  for (const Tensor& t : inputs) dtype = promote_types(dtype, t.dtype());
  std::vector<Tensor> outputs;
  for (int o = 0; o < program.num_outputs; ++o) {
    outputs.push_back(empty(sizes, TensorOptions{}.with_dtype(dtype).with_device(Device::cuda(device))));
  }
  if (outputs[0].numel() == 0) return outputs;
  const std::vector<IterDim> dims = iteration_dims(sizes, inputs, program.num_outputs);
  CUDASCOPE_CHECK(dims.size() <= static_cast<std::size_t>(kJitMaxDims), error_code::kInvalidValue, kCall,
                  "the inputs need " + std::to_string(dims.size()) + " dimensions after merging contiguous ones (at most " +
                      std::to_string(kJitMaxDims) + "); output sizes " + sizes_text(sizes));
  const JitKernel kernel = make_kernel(program, inputs, outputs, dims, scalars);
  const CurrentStreamOf stream = current_stream_of(device);
  declare_accesses(device, stream.id, inputs, outputs);
  lazy_backend().launch_jit_kernel(device, stream.handle, kernel);
  return outputs;
}

}  // namespace cudascope::cuda::detail
