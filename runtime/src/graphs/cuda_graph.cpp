// CUDAGraph: PyTorch's CUDAGraph.cpp over the Backend seam. capture_begin points the caching
// allocator at the graph's private pool for the capture's streams before the capture begins;
// capture_end ends both; reset hands the pool back (PyTorch's releasePool).
#include <cudascope/cuda/graphs.h>

#include "../allocator/caching_allocator.h"
#include "../check.h"
#include "../random/graph_registration.h"
#include "../runtime_state.h"

#include <cudascope/cuda/device.h>

#include <atomic>
#include <memory>

namespace cudascope::cuda {
namespace {
// PyTorch's MemPool ids: CUDAGraph's own pools count in the first half, graph_pool_handle's in
// the second; both from 1.
std::atomic<unsigned long long> next_graph_pool{1};
std::atomic<unsigned long long> next_user_pool{1};

detail::Backend& graphs_backend() { return detail::lazy_backend(); }
}  // namespace

MempoolId graph_pool_handle() { return {0, next_user_pool.fetch_add(1)}; }

bool is_current_stream_capturing() {
  const int device = detail::resolve_device(-1);
  const detail::CurrentStreamOf current = detail::current_stream_of(device);
  return graphs_backend().stream_capture_info(device, current.handle).status != detail::CaptureStatus::kNone;
}

CaptureErrorMode capture_error_mode(const std::string& name) {
  if (name == "global") return CaptureErrorMode::kGlobal;
  if (name == "thread_local") return CaptureErrorMode::kThreadLocal;
  if (name == "relaxed") return CaptureErrorMode::kRelaxed;
  detail::throw_error(error_code::kInvalidValue, "capture_error_mode", __FILE__, __LINE__,
                      "'" + name + "' is not a capture error mode (global, thread_local or relaxed)");
}

CUDAGraph::CUDAGraph(bool keep_graph) : keep_graph_(keep_graph) {}

CUDAGraph::~CUDAGraph() {
  try {
    reset();
    if (registered_device_ >= 0) detail::random::unregister_graph(registered_device_, this);
  } catch (...) {
    // A destructor cannot report; reset() destroys what it can before anything throws.
  }
}

void CUDAGraph::capture_begin(std::optional<MempoolId> pool, CaptureErrorMode capture_error_mode) {
  CUDASCOPE_CHECK(graph_exec_ == nullptr && graph_ == nullptr && !capturing_, error_code::kInvalidValue,
                  "CUDAGraph::capture_begin",
                  "this CUDAGraph already owns a captured graph; reset() it or capture into a new instance");
  const int device = detail::resolve_device(-1);
  // As torch: the default generator learns of the graph first (its seed and offset tensors are
  // allocated on the current stream for the first graph), even when the checks below fail.
  detail::random::register_graph(device, this);
  registered_device_ = device;
  const detail::CurrentStreamOf stream = detail::current_stream_of(device);
  CUDASCOPE_CHECK(stream.handle != nullptr, error_code::kInvalidValue, "CUDAGraph::capture_begin",
                  "CUDA graphs must be captured on a non-default stream (replaying on the default stream is fine)");
  const MempoolId id = pool.value_or(MempoolId{next_graph_pool.fetch_add(1), 0});
  CUDASCOPE_CHECK(!(id.first != 0 && id.second != 0), error_code::kInvalidValue, "CUDAGraph::capture_begin",
                  "a pool id has one nonzero half (graph_pool_handle() or another graph's pool())");
  // The allocator asks the filter under its lock, perhaps from other threads: the capture id
  // is shared through an atomic (0 until the capture has begun, which matches no capture).
  auto capture_id = std::make_shared<std::atomic<std::uint64_t>>(0);
  detail::Backend& backend = graphs_backend();
  detail::alloc::begin_allocate_to_pool(device, id, [device, capture_id, &backend](void* s) {
    const std::uint64_t expected = capture_id->load(std::memory_order_acquire);
    if (expected == 0) return false;
    const detail::CaptureInfo info = backend.stream_capture_info(device, s);
    return info.status == detail::CaptureStatus::kActive && info.id == expected;
  });
  device_ = device;
  pool_ = id;
  holds_pool_ = true;
  try {
    backend.stream_begin_capture(device, stream.handle, static_cast<detail::CaptureMode>(capture_error_mode));
  } catch (...) {
    end_pool_allocation();
    detail::alloc::release_pool(device_, pool_);
    holds_pool_ = false;
    throw;
  }
  capture_stream_ = stream.handle;
  capture_id_ = backend.stream_capture_info(device, stream.handle).id;
  capture_id->store(capture_id_, std::memory_order_release);
  capturing_ = true;
}

void CUDAGraph::end_pool_allocation() noexcept {
  try {
    detail::alloc::end_allocate_to_pool(device_, pool_);
  } catch (...) {
    // Not allocating to the pool: nothing to end.
  }
}

void CUDAGraph::capture_end() {
  CUDASCOPE_CHECK(capturing_, error_code::kInvalidValue, "CUDAGraph::capture_end", "no capture_begin before it");
  CUDASCOPE_CHECK(detail::current_stream_of(device_).handle == capture_stream_, error_code::kInvalidValue,
                  "CUDAGraph::capture_end", "capture must end on the same stream it began on");
  detail::Backend& backend = graphs_backend();
  capturing_ = false;
  void* graph = nullptr;
  try {
    graph = backend.stream_end_capture(device_, capture_stream_);
  } catch (...) {
    // The capture is over (CUDA ends it even when it fails): nothing replays from the pool.
    end_pool_allocation();
    detail::alloc::release_pool(device_, pool_);
    holds_pool_ = false;
    throw;
  }
  end_pool_allocation();
  graph_ = graph;
  graph_exec_ = backend.graph_instantiate(device_, graph_);
  if (!keep_graph_ && !debug_) {
    backend.graph_destroy(device_, graph_);
    graph_ = nullptr;
  }
}

void CUDAGraph::replay() {
  CUDASCOPE_CHECK(graph_exec_ != nullptr, error_code::kInvalidValue, "CUDAGraph::replay",
                  "called without a preceding successful capture");
  DeviceGuard on(device_);
  graphs_backend().graph_launch(device_, graph_exec_, detail::current_stream_of(device_).handle);
}

void CUDAGraph::reset() {
  if (device_ < 0) return;  // never captured
  detail::Backend& backend = graphs_backend();
  if (capturing_) {  // reset during a capture: end it and drop what it recorded
    capturing_ = false;
    try {
      backend.graph_destroy(device_, backend.stream_end_capture(device_, capture_stream_));
    } catch (...) {
      // An invalidated capture has no graph to destroy.
    }
    end_pool_allocation();
  }
  void* graph = std::exchange(graph_, nullptr);
  void* exec = std::exchange(graph_exec_, nullptr);
  const bool release = std::exchange(holds_pool_, false);
  if (release) detail::alloc::release_pool(device_, pool_);
  if (graph != nullptr) backend.graph_destroy(device_, graph);
  if (exec != nullptr) backend.graph_exec_destroy(device_, exec);
}

MempoolId CUDAGraph::pool() const {
  CUDASCOPE_CHECK(device_ >= 0, error_code::kInvalidValue, "CUDAGraph::pool", "called before capture_begin");
  return pool_;
}

void CUDAGraph::enable_debug_mode() { debug_ = true; }

void CUDAGraph::debug_dump(const std::string& path) {
  CUDASCOPE_CHECK(graph_ != nullptr, error_code::kInvalidValue, "CUDAGraph::debug_dump",
                  "no graph kept: call enable_debug_mode() (or construct with keep_graph) before capture_end");
  graphs_backend().graph_debug_dot_print(graph_, path);
}

std::size_t CUDAGraph::num_nodes() const {
  CUDASCOPE_CHECK(graph_ != nullptr, error_code::kInvalidValue, "CUDAGraph::num_nodes",
                  "no graph kept: call enable_debug_mode() (or construct with keep_graph) before capture_end");
  return graphs_backend().graph_node_count(graph_);
}

}  // namespace cudascope::cuda
