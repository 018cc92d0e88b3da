#pragma once
// A jiterator call: checks the inputs, broadcasts them, makes the outputs and queues the
// kernel on the current stream of the inputs' device through the Backend seam.

#include "jit_kernel.h"

#include <vector>

namespace cudascope::cuda::detail {

// Runs `program` over `inputs` with `scalars` (values in declared order); returns the
// program's num_outputs new tensors. Throws cuda::Error (kInvalidValue) naming the input at fault.
std::vector<Tensor> run_jit_program(const JitProgram& program, const std::vector<Tensor>& inputs,
                                    const std::vector<double>& scalars);

// torch's type promotion over this runtime's dtypes.
DType promote_types(DType a, DType b) noexcept;

}  // namespace cudascope::cuda::detail
