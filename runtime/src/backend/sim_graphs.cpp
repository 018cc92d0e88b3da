#include "sim_graphs.h"

#include "sim_stream.h"

#include "../check.h"

#include <cudascope/cuda/instrumentation.h>

#include <algorithm>
#include <fstream>
#include <thread>

namespace cudascope::cuda::detail {
namespace {
// cudaThreadExchangeStreamCaptureMode's per-thread mode; global until the thread changes it.
thread_local CaptureMode thread_capture_mode = CaptureMode::kGlobal;

// CUDA's rule for potentially unsafe calls: a thread in global mode may not make them while
// it captures (other than relaxed) or while another thread captures in global mode; a thread in
// thread-local mode only while it captures itself; a relaxed thread always may.
bool forbids_unsafe_calls(const SimCapture& capture, CaptureMode thread_mode) {
  if (thread_mode == CaptureMode::kRelaxed || capture.mode == CaptureMode::kRelaxed) return false;
  const bool own = capture.thread == std::this_thread::get_id();
  if (thread_mode == CaptureMode::kThreadLocal) return own;
  return own || capture.mode == CaptureMode::kGlobal;
}
}  // namespace

void SimGraphs::begin_capture(int device, SimStream* origin, CaptureMode mode) {
  CUDASCOPE_CHECK(origin->capture() == nullptr, error_code::kIllegalState, "cudaStreamBeginCapture",
                  "the stream is already capturing");
  std::lock_guard lock(mutex_);
  auto capture = std::make_shared<SimCapture>(next_capture_id_++, mode, device, origin);
  underway_.push_back(capture);
  origin->set_capture(std::move(capture));
}

GraphHandle SimGraphs::end_capture(SimStream* origin) {
  SimCapturePtr capture = origin->capture();
  CUDASCOPE_CHECK(capture != nullptr, error_code::kIllegalState, "cudaStreamEndCapture", "the stream is not capturing");
  CUDASCOPE_CHECK(capture->origin == origin, error_code::kStreamCaptureUnmatched, "cudaStreamEndCapture",
                  "the capture must end on the stream it began on, not on a stream that joined it");
  std::vector<std::pair<SimStream*, bool>> joined;
  {
    std::lock_guard lock(mutex_);
    underway_.erase(std::remove(underway_.begin(), underway_.end(), capture), underway_.end());
    for (auto it = capture_events_.begin(); it != capture_events_.end();) {
      it = it->second.capture == capture ? capture_events_.erase(it) : std::next(it);
    }
  }
  {
    std::lock_guard lock(capture->mutex);
    joined = capture->joined;
  }
  origin->set_capture(nullptr);
  for (const auto& [stream, unjoined] : joined) stream->set_capture(nullptr);
  std::lock_guard lock(capture->mutex);
  CUDASCOPE_CHECK(!capture->invalidated, error_code::kStreamCaptureInvalidated, "cudaStreamEndCapture",
                  "the capture was invalidated by " + capture->invalidated_by);
  const bool all_joined =
      std::none_of(joined.begin(), joined.end(), [](const auto& entry) { return entry.second; });
  CUDASCOPE_CHECK(all_joined, error_code::kStreamCaptureUnjoined, "cudaStreamEndCapture",
                  "a stream that joined the capture has work not joined back into the capturing stream");
  return new SimGraph(std::move(capture->graph));
}

CaptureInfo SimGraphs::capture_info(SimStream* stream) const {
  const SimCapturePtr capture = stream->capture();
  if (capture == nullptr) return {};
  std::lock_guard lock(capture->mutex);
  return {capture->invalidated ? CaptureStatus::kInvalidated : CaptureStatus::kActive, capture->id};
}

CaptureMode SimGraphs::exchange_thread_mode(CaptureMode mode) { return std::exchange(thread_capture_mode, mode); }

void SimGraphs::check_capture_safe(int device, const char* call) {
  std::lock_guard lock(mutex_);
  if (underway_.empty()) [[likely]] return;
  bool forbidden = false;
  for (const SimCapturePtr& capture : underway_) {
    if (!forbids_unsafe_calls(*capture, thread_capture_mode)) continue;
    capture->invalidate(call);
    forbidden = true;
  }
  CUDASCOPE_CHECK(!forbidden, error_code::kStreamCaptureUnsupported, call,
                  std::string(call) + " on device " + std::to_string(device) +
                      " is not allowed while a stream captures in this thread's capture mode (the capture is "
                      "invalidated)");
}

void SimGraphs::check_not_capturing(SimStream& stream, const char* call) {
  const SimCapturePtr capture = stream.capture();
  if (capture == nullptr) [[likely]] return;
  capture->invalidate(call);
  throw_error(error_code::kStreamCaptureUnsupported, call, __FILE__, __LINE__,
              std::string(call) + " on a capturing stream is not allowed (the capture is invalidated)");
}

bool SimGraphs::record_event(EventHandle event, SimStream& stream) {
  SimCapturePtr capture = stream.capture();
  std::lock_guard lock(mutex_);
  if (capture == nullptr) {
    capture_events_.erase(event);  // recorded outside any capture again: an ordinary event
    return false;
  }
  capture_events_[event] = {std::move(capture), &stream};
  return true;
}

bool SimGraphs::wait_event(EventHandle event, SimStream& stream) {
  std::lock_guard lock(mutex_);
  auto it = capture_events_.find(event);
  if (it == capture_events_.end()) return false;
  const CapturePoint point = it->second;
  const SimCapturePtr current = stream.capture();
  if (current == nullptr) {  // a fork: the waiting stream joins the capture
    {
      std::lock_guard capture_lock(point.capture->mutex);
      point.capture->joined.emplace_back(&stream, false);
    }
    stream.set_capture(point.capture);
    return true;
  }
  if (current != point.capture) {
    current->invalidate("cudaStreamWaitEvent");
    throw_error(error_code::kStreamCaptureIsolation, "cudaStreamWaitEvent", __FILE__, __LINE__,
                "the event was recorded in another capture sequence (the capture is invalidated)");
  }
  // A join: the recording stream's work so far is ordered before the waiting stream's.
  std::lock_guard capture_lock(point.capture->mutex);
  for (auto& [joined, unjoined] : point.capture->joined) {
    if (joined == point.stream && joined != &stream) unjoined = false;
  }
  return true;
}

void SimGraphs::forget_event(EventHandle event) {
  std::lock_guard lock(mutex_);
  capture_events_.erase(event);
}

GraphExecHandle SimGraphs::instantiate(GraphHandle graph) {
  CUDASCOPE_CHECK(graph != nullptr, error_code::kInvalidValue, "cudaGraphInstantiate", "no graph");
  std::lock_guard lock(mutex_);
  return new SimGraphExec{std::make_shared<const SimGraph>(*static_cast<SimGraph*>(graph)), next_graph_id_++};
}

void SimGraphs::launch(GraphExecHandle exec, SimStream& stream, std::uint32_t correlation_id) {
  CUDASCOPE_CHECK(exec != nullptr, error_code::kInvalidValue, "cudaGraphLaunch", "no instantiated graph");
  const auto* graph_exec = static_cast<SimGraphExec*>(exec);
  const instrumentation::GraphReplay replay{correlation_id, graph_exec->id};
  for (const SimGraphNode& node : graph_exec->graph->nodes) {
    stream.enqueue(
        [work = node.work, replay] {
          instrumentation::set_current_graph_replay(replay);
          work();
          instrumentation::set_current_graph_replay({});
        },
        node.label.c_str());
  }
}

void SimGraphs::destroy_graph(GraphHandle graph) { delete static_cast<SimGraph*>(graph); }

void SimGraphs::destroy_exec(GraphExecHandle exec) { delete static_cast<SimGraphExec*>(exec); }

void SimGraphs::write_dot(GraphHandle graph, const std::string& path) {
  const auto& nodes = static_cast<SimGraph*>(graph)->nodes;
  std::ofstream out(path);
  CUDASCOPE_CHECK(out.good(), error_code::kInvalidValue, "cudaGraphDebugDotPrint", "cannot write '" + path + "'");
  out << "digraph cudascope_sim_graph {\n";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    out << "  n" << i << " [label=\"" << i << ": " << nodes[i].label << "\"];\n";
    if (i > 0) out << "  n" << i - 1 << " -> n" << i << ";\n";
  }
  out << "}\n";
  CUDASCOPE_CHECK(out.good(), error_code::kInvalidValue, "cudaGraphDebugDotPrint", "cannot write '" + path + "'");
}

std::size_t SimGraphs::node_count(GraphHandle graph) { return static_cast<SimGraph*>(graph)->nodes.size(); }

}  // namespace cudascope::cuda::detail
