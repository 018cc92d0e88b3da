#pragma once
// The simulated device's CUDA graphs: a capture sequence records the work queued on its
// streams as an ordered list of nodes; a graph is that list; launching it queues the nodes on
// the launch stream in order (a valid schedule of the captured dependencies: the sim runs a
// graph's branches one after another).

#include "backend.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cudascope::cuda::detail {

class SimStream;

struct SimGraphNode {
  std::string label;  // "kernel <name>", "memcpy", "memset", "event wait" (debug_dump)
  std::function<void()> work;
};

struct SimGraph {
  std::vector<SimGraphNode> nodes;
};

// An instantiated graph: its nodes, fixed at instantiation as cudaGraphExec_t's are.
struct SimGraphExec {
  std::shared_ptr<const SimGraph> graph;
  std::uint32_t id = 0;  // reported as the graph id of the kernels a launch runs
};

// One capture sequence (cudaStreamBeginCapture .. cudaStreamEndCapture). The origin stream
// began it; other streams join by waiting on an event recorded in it. Thread-safe: the
// mutex guards every field that changes.
struct SimCapture {
  SimCapture(std::uint64_t id, CaptureMode mode, int device, SimStream* origin)
      : id(id), mode(mode), device(device), origin(origin), thread(std::this_thread::get_id()) {}

  const std::uint64_t id;
  const CaptureMode mode;
  const int device;
  SimStream* const origin;
  const std::thread::id thread;

  std::mutex mutex;
  SimGraph graph;
  bool invalidated = false;
  std::string invalidated_by;  // the call that invalidated it
  // Joined streams with work not yet joined back into the origin (cudaErrorStreamCaptureUnjoined).
  std::vector<std::pair<SimStream*, bool>> joined;

  void append(SimGraphNode node, SimStream* from);
  void invalidate(const std::string& call);
};

using SimCapturePtr = std::shared_ptr<SimCapture>;

}  // namespace cudascope::cuda::detail
