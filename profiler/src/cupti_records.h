#pragma once
// The CUPTI record layouts the decoder reads, chosen by the toolkit it is built with. CUPTI
// keeps a record's newest layouts and drops the older ones in later releases (CUDA 13.0's
// headers have no CUpti_ActivityKernel9; 13.2's none of Kernel10, Context3 and Device5), while
// a newer layout only appends fields: so the decoder names the newest layout the headers
// define, and reads the fields every one of them has. A record CUPTI writes in a newer layout
// than the headers know is read by its leading fields, which it shares.

#include <cupti.h>

// CUDA 13's launch callbacks (cudaLaunchKernel through __cudaLaunchKernel) and record
// layouts; older toolkits are refused at configure time (CMakeLists.txt) with the same reason.
#if !defined(CUDA_VERSION) || CUDA_VERSION < 13000
#error "cudascope's CUPTI source needs the CUDA 13.0 toolkit or later"
#endif

namespace cudascope::profiler::detail {

// 13.2 replaced the three (13.1 still defines the older ones, deprecated).
#if CUPTI_API_VERSION >= 130200
using CuptiKernelRecord = CUpti_ActivityKernel11;
using CuptiContextRecord = CUpti_ActivityContext4;
using CuptiDeviceRecord = CUpti_ActivityDevice6;
#else
using CuptiKernelRecord = CUpti_ActivityKernel10;
using CuptiContextRecord = CUpti_ActivityContext3;
using CuptiDeviceRecord = CUpti_ActivityDevice5;
#endif

}  // namespace cudascope::profiler::detail
