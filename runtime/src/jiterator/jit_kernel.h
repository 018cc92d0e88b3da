#pragma once
// A jiterator launch as plain data, handed through the Backend seam (backend.h): the program
// (code string, entry name, scalars), the variant to compile, and the argument block the
// generated kernel reads. Each backend compiles the variant on first use (host_jit.h,
// device_jit.h) and queues it on a stream.

#include <cudascope/cuda/jiterator.h>
#include <cudascope/cuda/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::cuda::detail {

inline constexpr int kJitMaxInputs = 8;
inline constexpr int kJitMaxOutputs = 8;
inline constexpr int kJitMaxOperands = kJitMaxInputs + kJitMaxOutputs;
inline constexpr int kJitMaxDims = 8;
inline constexpr int kJitMaxScalars = 16;

// What create_jit_fn / create_multi_output_jit_fn made; immutable once made.
struct JitProgram {
  std::string code;
  std::string name;      // the entry function
  int num_outputs = 1;
  bool return_by_ref = false;  // multi-output form: outputs through T& parameters
  std::vector<jiterator::ScalarArg> scalars;  // declared order, with defaults
};

// The generated kernels' argument block: by value on the device, by pointer on the host.
// jit_source.cpp emits the same struct into the generated code and asserts its size there.
struct JitArgs {
  void* data[kJitMaxOperands];  // outputs first, then inputs
  std::int64_t numel;
  std::int32_t ndim;
  std::int32_t unused;
  std::int64_t sizes[kJitMaxDims];
  std::int64_t strides[kJitMaxOperands][kJitMaxDims];  // in elements; 0 where broadcast
  double scalars[kJitMaxScalars];
};
inline constexpr std::size_t kJitArgsBytes = 1360;
static_assert(sizeof(JitArgs) == kJitArgsBytes, "jit_source.cpp's copy of JitArgs must match");

struct JitKernel {
  const JitProgram* program = nullptr;
  std::vector<DType> inputs;  // dtypes, in call order
  DType output = DType::kFloat32;
  // Every operand walks memory in the output's order with stride 1: a flat kernel (ndim <= 1).
  bool contiguous = false;
  JitArgs args{};

  int num_inputs() const noexcept { return static_cast<int>(inputs.size()); }
  int num_operands() const noexcept { return num_inputs() + program->num_outputs; }
};

// The compiled kernels' names, as a profiler shows them (CUPTI's name on the GPU):
// "<name>_kernel" (strided), "<name>_vectorized<V>_kernel" (flat, V elements per thread on
// the GPU), "<name>_contiguous_kernel" (flat, one element at a time).
std::string jit_kernel_name(const JitKernel& kernel, int vector_width);

// The cache key of a variant for `target` ("host", "sm_90", ...).
std::string jit_cache_key(const JitKernel& kernel, int vector_width, const std::string& target);

}  // namespace cudascope::cuda::detail
