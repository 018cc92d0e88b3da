#pragma once
// torch.cuda.jiterator: element-wise kernels compiled at run time from a C++ code string.
//
//   auto fn = cuda::jiterator::create_jit_fn(
//       "template <typename T> T my_kernel(T x, T y, T alpha) { return -x + alpha * y; }",
//       /*name=*/"", {{"alpha", 1.0}});
//   Tensor out = fn({a, b});                    // alpha = 1.0, its default
//   Tensor out2 = fn({a, b}, {{"alpha", 3.14}});
//
// The entry function is a template over the compute type T. It is called once per output
// element as name<T>(inputs..., scalars..., outputs...): the inputs' elements converted to T,
// then the scalars in their declared order, then (multi-output functions only) one T& per
// output; a single-output function returns its value instead. As in torch:
//   - inputs broadcast against each other (sizes of 1 stretch) and may be any strided views;
//   - the outputs are new contiguous tensors of the inputs' common dtype (torch's type
//     promotion: bool < uint8 < int32 < int64 < float16, bfloat16 < float32, and
//     float16 with bfloat16 gives float32), on the inputs' device;
//   - T is that dtype, except float16 and bfloat16, computed in float (torch's compute type);
//   - work is queued on the current stream of the inputs' device;
//   - at most 8 inputs and 8 outputs; after merging dimensions that are contiguous in every
//     operand, at most 8 dimensions.
// Scalars are doubles here (torch also passes Python ints and bools): a scalar reaches the
// function as a double and converts to the parameter's type, so integer scalars are exact up
// to 2^53.
//
// Compilation happens on the calling thread at the first call of each variant, and the
// compiled kernel is kept for the life of the process (as torch's jiterator cache). A
// variant is the code string, the entry name, the number of inputs and outputs, the input
// and output dtypes, whether every operand is contiguous (then a flat kernel, vectorised on
// the GPU when the pointers are aligned: the vector width is part of the variant) and, on the
// GPU, the device's architecture. Identical code strings share compiled kernels across
// JitFunction objects.
//
// Backends:
//   cuda  NVRTC, loaded at run time (libnvrtc.so.13 / .12 / libnvrtc.so on the library path,
//         then in $CUDA_HOME/lib64 and /usr/local/cuda/lib64), compiles a generated
//         `extern "C" __global__` kernel for the device's architecture (sm_XY, or PTX for the
//         newest architecture NVRTC knows when it does not know the device's); the CUDA
//         runtime's library API loads it. Without NVRTC: cuda::Error (kNotSupported) naming
//         every place tried.
//   sim   the host C++ compiler ($CXX, else c++ or g++ on PATH) builds the same function
//         into a shared object that runs on the stream's worker thread; the profiler sees its
//         launches as kernels. Without a compiler: cuda::Error (kNotSupported).
// A code string that does not compile raises cuda::Error (kInvalidValue) carrying the
// compiler's log; bad arguments raise cuda::Error (kInvalidValue) naming the value at fault.
//
// Thread-safety: create_* and the functions they return may be used from any thread,
// concurrently; concurrent first calls of one variant compile it once (other threads wait).

#include <cudascope/cuda/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cudascope::cuda::detail {
struct JitProgram;
}  // namespace cudascope::cuda::detail

namespace cudascope::cuda::jiterator {

// A named scalar argument (torch's keyword arguments), passed after the tensors in the order
// they were declared at creation.
struct ScalarArg {
  std::string name;
  double value = 0;
};

// What create_jit_fn returns: callable like torch's jitted function. Cheap to copy (copies
// share the program).
class JitFunction {
 public:
  // Runs the function over `inputs` (1 to 8 CUDA tensors on one device). `scalars` override
  // the creation defaults by name; a name not declared at creation is an error.
  Tensor operator()(const std::vector<Tensor>& inputs, const std::vector<ScalarArg>& scalars = {}) const;
  // The entry function's name.
  const std::string& name() const noexcept;

 private:
  JitFunction() = default;
  friend JitFunction create_jit_fn(const std::string&, const std::string&, std::vector<ScalarArg>);
  std::shared_ptr<const detail::JitProgram> program_;
};

// What create_multi_output_jit_fn returns: as JitFunction, with num_outputs outputs.
class MultiOutputJitFunction {
 public:
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<ScalarArg>& scalars = {}) const;
  const std::string& name() const noexcept;
  int num_outputs() const noexcept;

 private:
  MultiOutputJitFunction() = default;
  friend MultiOutputJitFunction create_multi_output_jit_fn(const std::string&, const std::string&, int,
                                                           std::vector<ScalarArg>);
  std::shared_ptr<const detail::JitProgram> program_;
};

// torch.cuda.jiterator._create_jit_fn(code_string, **kwargs). The entry function returns its
// value. `name` selects the entry function; empty: the last template function defined in
// `code` (torch's rule). `scalars`: the scalar arguments and their defaults, in call order.
// Checks the arguments' form only; the code is compiled at the first call.
JitFunction create_jit_fn(const std::string& code, const std::string& name = {}, std::vector<ScalarArg> scalars = {});

// torch.cuda.jiterator._create_multi_output_jit_fn(code_string, num_outputs, **kwargs): the
// entry function returns void and writes num_outputs (1 to 8) outputs through its last
// parameters (T&).
MultiOutputJitFunction create_multi_output_jit_fn(const std::string& code, const std::string& name, int num_outputs,
                                                  std::vector<ScalarArg> scalars = {});

// Diagnostics: how many kernels this process has compiled so far (each variant once; a
// call that finds its variant compiled adds nothing).
std::int64_t compiled_kernel_count() noexcept;

}  // namespace cudascope::cuda::jiterator
