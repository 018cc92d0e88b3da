#pragma once
// The simulated device's stream capture and CUDA graphs (sim_graph.h holds the captured
// data): cudaStreamBeginCapture / EndCapture / GetCaptureInfo, the thread's capture mode,
// streams joining a capture through events, capture-unsafe calls, and instantiated graphs
// launched onto a stream. The SimBackend forwards its graph calls here.
// Thread-safe: one mutex guards the captures underway and the events recorded in captures.

#include "backend.h"
#include "sim_graph.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace cudascope::cuda::detail {

class SimStream;

class SimGraphs {
 public:
  // `origin` must not be the legacy stream (the caller passes nullptr for it).
  void begin_capture(int device, SimStream* origin, CaptureMode mode);
  // Ends the capture `origin` began; the graph is the caller's (destroy_graph). Throws when
  // the capture was invalidated or left a joined stream unjoined; it is over either way.
  GraphHandle end_capture(SimStream* origin);
  CaptureInfo capture_info(SimStream* stream) const;
  CaptureMode exchange_thread_mode(CaptureMode mode);

  // A capture-unsafe call (cudaMalloc, cudaFree, device synchronisation) on `device` by this
  // thread: when a capture forbids it, that capture is invalidated and cuda::Error
  // (cudaErrorStreamCaptureUnsupported) thrown, as CUDA does.
  void check_capture_safe(int device, const char* call);
  // Synchronising or querying a capturing stream: invalidates its capture and throws.
  void check_not_capturing(SimStream& stream, const char* call);

  // An event recorded on a capturing stream marks a point of that capture: a stream that
  // waits on it joins the capture (or, already in it, joins the recording stream's work
  // back). Returns true when the record or the wait belongs to a capture (nothing to queue).
  bool record_event(EventHandle event, SimStream& stream);
  bool wait_event(EventHandle event, SimStream& stream);
  void forget_event(EventHandle event);

  GraphExecHandle instantiate(GraphHandle graph);
  // Queues the graph's nodes on `stream`; their activity reports carry `correlation_id` (the
  // launch call's) and the graph's id.
  void launch(GraphExecHandle exec, SimStream& stream, std::uint32_t correlation_id);
  void destroy_graph(GraphHandle graph);
  void destroy_exec(GraphExecHandle exec);
  void write_dot(GraphHandle graph, const std::string& path);
  std::size_t node_count(GraphHandle graph);

 private:
  struct CapturePoint {
    SimCapturePtr capture;
    SimStream* stream;
  };

  mutable std::mutex mutex_;
  std::uint64_t next_capture_id_ = 1;
  std::uint32_t next_graph_id_ = 1;
  std::vector<SimCapturePtr> underway_;
  std::map<EventHandle, CapturePoint> capture_events_;
};

}  // namespace cudascope::cuda::detail
