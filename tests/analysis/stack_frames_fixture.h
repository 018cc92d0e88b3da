#pragma once
// A small snapshot in PyTorch's JSON schema whose stacks were recorded with C++ frames
// (`_record_memory_history(stacks="all")`): the unwinder's and the caching allocator's
// frames first, then ATen, the interpreter and the training script, as PyTorch writes them.
// Shared by the analysis and viewer tests of frame hiding and user frames.

#include <cudascope/analysis/loader.h>

#include <string>

namespace cudascope::analysis::testing {

inline std::string cpp_stack_snapshot_json() {
  const std::string frames = R"js([
    {"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
    {"name": "torch::CapturedTraceback::gather(bool, bool, bool)", "filename": "??", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", "filename": "??", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", "filename": "??", "line": 0},
    {"name": "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)", "filename": "??", "line": 0},
    {"name": "_PyEval_EvalFrameDefault", "filename": "/usr/local/src/conda/python-3.11.9/Python/ceval.c", "line": 5208},
    {"name": "forward", "filename": "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py", "line": 125},
    {"name": "train_step", "filename": "train.py", "line": 12},
    {"name": "<module>", "filename": "train.py", "line": 40},
    {"name": "__libc_start_main", "filename": "??", "line": 0},
    {"name": "_start", "filename": "??", "line": 0}])js";
  // Only the allocator's own frames: nothing a reader would want to see.
  const std::string allocator_only = R"js([
    {"name": "torch::unwind::unwind()", "filename": "??", "line": 0},
    {"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", "filename": "??", "line": 0}])js";
  return R"js({"segments": [{"device": 0, "address": 1048576, "total_size": 2097152, "allocated_size": 3072,
      "active_size": 3072, "requested_size": 3000, "stream": 0, "segment_type": "small", "segment_pool_id": [0, 0],
      "is_expandable": false, "frames": )js" + frames + R"js(, "blocks": [
      {"address": 1048576, "size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": )js" + frames + R"js(},
      {"address": 1049600, "size": 2048, "requested_size": 2000, "state": "active_allocated", "frames": )js" + allocator_only + R"js(},
      {"address": 1051648, "size": 2093056, "requested_size": 0, "state": "inactive", "frames": []}]}],
    "device_traces": [[
      {"action": "segment_alloc", "addr": 1048576, "size": 2097152, "stream": 0, "time_us": 10, "frames": )js" + frames + R"js(},
      {"action": "alloc", "addr": 1048576, "size": 1024, "stream": 0, "time_us": 11, "frames": )js" + frames + R"js(},
      {"action": "alloc", "addr": 1049600, "size": 2048, "stream": 0, "time_us": 12, "frames": )js" + allocator_only + R"js(}]],
    "allocator_settings": {}})js";
}

// The snapshot above, loaded (empty, with a test failure, if it does not load).
inline Snapshot cpp_stack_snapshot() {
  auto result = load_snapshot_from_bytes(cpp_stack_snapshot_json(), "cpp_stack_snapshot.json");
  if (!result) {
    ADD_FAILURE() << result.error().message();
    return Snapshot{};
  }
  return std::move(result).value();
}

}  // namespace cudascope::analysis::testing
