// make_graphed_callables, forward only (torch/cuda/graphs.py without the autograd half):
// warm-up on a side stream, then one capture per callable into a shared private pool.
#include <cudascope/cuda/graphs.h>

#include "../check.h"

#include <cudascope/cuda/device.h>

namespace cudascope::cuda {

std::vector<Tensor> GraphedCallable::operator()(const std::vector<Tensor>& inputs) const {
  State& state = *state_;
  CUDASCOPE_CHECK(inputs.size() == state.static_inputs.size(), error_code::kInvalidValue, "GraphedCallable",
                  "called with " + std::to_string(inputs.size()) + " inputs; it was captured with " +
                      std::to_string(state.static_inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor& target = state.static_inputs[i];
    if (inputs[i].data_ptr() == target.data_ptr()) continue;  // the static input itself
    CUDASCOPE_CHECK(inputs[i].sizes() == target.sizes() && inputs[i].dtype() == target.dtype(),
                    error_code::kInvalidValue, "GraphedCallable",
                    "input " + std::to_string(i) + " differs in shape or dtype from the sample it was captured with");
    target.copy_(inputs[i]);
  }
  state.graph.replay();
  return state.static_outputs;
}

std::vector<GraphedCallable> make_graphed_callables(const std::vector<TensorFunction>& callables,
                                                    const std::vector<std::vector<Tensor>>& sample_args,
                                                    int num_warmup_iters, std::optional<MempoolId> pool) {
  CUDASCOPE_CHECK(callables.size() == sample_args.size(), error_code::kInvalidValue, "make_graphed_callables",
                  "one list of sample inputs per callable is needed");
  for (const auto& args : sample_args) {
    for (const Tensor& t : args) {
      CUDASCOPE_CHECK(t.defined() && t.is_cuda(), error_code::kInvalidValue, "make_graphed_callables",
                      "sample inputs must be CUDA tensors (they become the graphs' static inputs)");
    }
  }
  // Warm-up on a side stream, so that lazy initialisation (handles, workspaces, the allocator's
  // first segments) happens before capture, as torch does.
  synchronize();
  {
    Stream side;
    side.wait_stream(current_stream());
    StreamGuard on_side(side);
    for (std::size_t i = 0; i < callables.size(); ++i) {
      for (int k = 0; k < num_warmup_iters; ++k) (void)callables[i](sample_args[i]);
    }
  }
  synchronize();
  const MempoolId mempool = pool.value_or(graph_pool_handle());
  std::vector<GraphedCallable> graphed(callables.size());
  for (std::size_t i = 0; i < callables.size(); ++i) {
    auto state = std::make_shared<GraphedCallable::State>();
    state->static_inputs = sample_args[i];
    {
      GraphCapture capture(state->graph, mempool);
      state->static_outputs = callables[i](state->static_inputs);
      capture.end();
    }
    graphed[i].state_ = std::move(state);
  }
  return graphed;
}

GraphedCallable make_graphed_callable(const TensorFunction& callable, const std::vector<Tensor>& sample_args,
                                      int num_warmup_iters, std::optional<MempoolId> pool) {
  return make_graphed_callables({callable}, {sample_args}, num_warmup_iters, pool).front();
}

}  // namespace cudascope::cuda
