#pragma once
// CUDA graphs, as torch.cuda's: CUDAGraph (capture_begin / capture_end / replay / reset),
// the scoped capture torch.cuda.graph(...) (GraphCapture), is_current_stream_capturing,
// graph_pool_handle and make_graphed_callables.
//
// During a capture the caching allocator serves the capture's streams from a private memory
// pool (one per graph, or shared between graphs through a pool handle), so memory a replay
// reads or writes is never given to anything else. Blocks freed during the capture stay in the
// pool; the pool's memory returns to the device only once every graph using it is reset (or
// destroyed) and empty_cache runs. memory_stats counts the pool's segments and blocks as
// PyTorch does (in the small/large pool figures); snapshots name each segment's pool
// (segment_pool_id, (0, 0) for the device's own).
//
// Works with the native caching allocator (the default); with backend:cudaMallocAsync or a
// pluggable allocator capture_begin raises cuda::Error. As torch, the first graph allocates
// the default generator's seed and offset tensors (two int64 tensors, freed when the last
// graph is destroyed), so memory figures match PyTorch's; random-number kernels still replay
// the numbers drawn at capture (torch's graph-safe Philox offsets are not modelled).
// Thread-safety: a CUDAGraph is used by one thread at a time; different graphs may capture on
// different threads.

#include <cudascope/cuda/stream.h>
#include <cudascope/cuda/tensor.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::cuda {

// torch's MempoolId_t: (id, 0) for pools CUDAGraph makes itself, (0, id) for graph_pool_handle()'s.
using MempoolId = std::pair<unsigned long long, unsigned long long>;

// torch.cuda.graph_pool_handle(): a new pool id to share between captures (pass it to
// capture_begin or GraphCapture). The pool itself is made at the first capture into it.
MempoolId graph_pool_handle();

// torch.cuda.is_current_stream_capturing(): whether the current stream of the current device is
// capturing (false on the legacy default stream, which cannot capture).
bool is_current_stream_capturing();

// cudaStreamCaptureMode, by torch's names: "global", "thread_local", "relaxed".
enum class CaptureErrorMode { kGlobal = 0, kThreadLocal = 1, kRelaxed = 2 };
// Parses "global", "thread_local" or "relaxed"; cuda::Error naming the value otherwise.
CaptureErrorMode capture_error_mode(const std::string& name);

class CUDAGraph {
 public:
  // keep_graph: keep the captured graph after instantiation (torch's keep_graph).
  explicit CUDAGraph(bool keep_graph = false);
  ~CUDAGraph();  // reset()
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  // Begins capturing the current stream (which must not be the default stream) into this
  // graph. pool: share that pool (from graph_pool_handle() or another graph's pool());
  // std::nullopt: a new private pool. Call order: capture_begin -> capture_end -> replay* ->
  // reset; a graph holding a capture must be reset before capturing again.
  void capture_begin(std::optional<MempoolId> pool = std::nullopt,
                     CaptureErrorMode capture_error_mode = CaptureErrorMode::kGlobal);
  // Ends the capture (on the stream it began on) and instantiates the graph. When the capture
  // failed (an invalidating call during it), throws cuda::Error with CUDA's code; the pool is
  // then released and the graph holds nothing.
  void capture_end();
  // Launches the graph on the current stream (any stream, as torch allows).
  void replay();
  // Destroys the graph and releases its pool (freed by empty_cache once no graph uses it).
  void reset();
  // The pool this graph allocates from (valid after capture_begin).
  MempoolId pool() const;

  // Keeps the captured graph after instantiation, so debug_dump can write it (torch's
  // enable_debug_mode).
  void enable_debug_mode();
  // Writes the graph as Graphviz DOT to `path` (cudaGraphDebugDotPrint). Needs
  // enable_debug_mode or keep_graph before capture_end; cuda::Error otherwise.
  void debug_dump(const std::string& path);
  // Number of nodes the capture recorded (needs the graph kept, as debug_dump).
  std::size_t num_nodes() const;

 private:
  void end_pool_allocation() noexcept;

  bool keep_graph_;
  bool debug_ = false;
  void* graph_ = nullptr;
  void* graph_exec_ = nullptr;
  bool capturing_ = false;
  bool holds_pool_ = false;
  MempoolId pool_{0, 0};
  int device_ = -1;
  int registered_device_ = -1;  // the device whose default generator knows this graph
  void* capture_stream_ = nullptr;
  std::uint64_t capture_id_ = 0;
};

// torch.cuda.graph(cuda_graph, pool, stream, capture_error_mode): synchronises the device,
// empties the cache, makes `stream` (default: one side stream shared by every GraphCapture, as
// torch's default_capture_stream) current and begins capturing into `graph`; the destructor
// ends the capture and restores the stream. When the scope is left by an exception, the
// capture is ended and discarded (the graph holds nothing) and the exception goes on.
// Capture errors found at the end (an invalidated capture) are thrown by end(), which the
// destructor calls only when end() was not called: call end() to see them.
class GraphCapture {
 public:
  // The exception counts are read here, in the caller's code: a runtime library carrying its
  // own copy of the C++ runtime (a toolchain that links libstdc++ statically, hidden) would
  // count only the exceptions it threw itself.
  explicit GraphCapture(CUDAGraph& graph, std::optional<MempoolId> pool = std::nullopt,
                        std::optional<Stream> stream = std::nullopt,
                        CaptureErrorMode capture_error_mode = CaptureErrorMode::kGlobal)
      : GraphCapture(graph, pool, stream, capture_error_mode, std::uncaught_exceptions()) {}
  ~GraphCapture() noexcept { finish(std::uncaught_exceptions() > exceptions_at_start_); }
  // Ends the capture now (capture_end) and restores the previous stream; throws its errors.
  void end();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;
  GraphCapture(GraphCapture&&) = delete;
  GraphCapture& operator=(GraphCapture&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

 private:
  GraphCapture(CUDAGraph& graph, std::optional<MempoolId> pool, std::optional<Stream> stream,
               CaptureErrorMode capture_error_mode, int exceptions_at_start);
  // Scope exit: ends the capture, or drops it when the scope is left by an exception.
  void finish(bool unwinding) noexcept;

  int exceptions_at_start_;
  CUDAGraph& graph_;
  Stream previous_stream_;
  int previous_device_;
  std::optional<Stream> previous_on_target_;  // the capture stream's device's current stream before
  bool ended_ = false;
};

// A callable over Tensors, for make_graphed_callables.
using TensorFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The graphed form of a callable: call it with tensors of the sample inputs' shapes and dtypes;
// it copies them into the static inputs (unless they are the static inputs), replays the graph
// and returns the static outputs (overwritten by the next call, as torch's are).
class GraphedCallable {
 public:
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  const std::vector<Tensor>& static_inputs() const noexcept { return state_->static_inputs; }
  const std::vector<Tensor>& static_outputs() const noexcept { return state_->static_outputs; }
  CUDAGraph& graph() const noexcept { return state_->graph; }

 private:
  friend std::vector<GraphedCallable> make_graphed_callables(const std::vector<TensorFunction>&,
                                                             const std::vector<std::vector<Tensor>>&, int,
                                                             std::optional<MempoolId>);
  struct State {
    CUDAGraph graph;
    std::vector<Tensor> static_inputs;
    std::vector<Tensor> static_outputs;
  };
  std::shared_ptr<State> state_;
};

// torch.cuda.make_graphed_callables, forward only: cudascope has no autograd, so no backward
// graph is captured and outputs carry no gradient history. For each callable and its sample
// inputs (CUDA tensors, used as the static inputs): num_warmup_iters calls on a side stream,
// then a capture into one private pool shared by all the callables (or `pool`), in order.
// Each callable must use only CUDA work the graph can hold (no synchronisation, no host reads).
std::vector<GraphedCallable> make_graphed_callables(const std::vector<TensorFunction>& callables,
                                                    const std::vector<std::vector<Tensor>>& sample_args,
                                                    int num_warmup_iters = 3,
                                                    std::optional<MempoolId> pool = std::nullopt);
// One callable.
GraphedCallable make_graphed_callable(const TensorFunction& callable, const std::vector<Tensor>& sample_args,
                                      int num_warmup_iters = 3, std::optional<MempoolId> pool = std::nullopt);

}  // namespace cudascope::cuda
