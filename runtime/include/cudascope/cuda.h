#pragma once
// The cudascope runtime: a torch.cuda-equivalent API in C++ (namespace cudascope::cuda).

#include <cudascope/cuda/blas.h>
#include <cudascope/cuda/comm.h>
#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/event.h>
#include <cudascope/cuda/graphs.h>
#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/cuda/ipc.h>
#include <cudascope/cuda/jiterator.h>
#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/nvtx.h>
#include <cudascope/cuda/random.h>
#include <cudascope/cuda/sanitizer.h>
#include <cudascope/cuda/stream.h>
#include <cudascope/cuda/telemetry.h>
#include <cudascope/cuda/tensor.h>
#include <cudascope/cuda/version.h>
