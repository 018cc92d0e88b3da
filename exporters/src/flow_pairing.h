#pragma once
// Pairs a launching API call with the device activity it started, by CUPTI correlation id,
// for the trace's "ac2g" flow arrows. Either side may arrive first (CUPTI delivers device
// records in their own buffers, often after the API records); each id pairs once.
//
// Memory stays bounded: past kMaxPending unmatched points on one side (launches whose
// kernel never came), that side is forgotten. Not thread-safe: one per trace writer.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace cudascope::exporters::detail {

struct FlowHostPoint {  // the launching call: thread and start
  std::uint32_t tid;
  std::uint64_t ts;
};
struct FlowDevicePoint {  // the activity: device, stream and start
  int device;
  std::int64_t stream;
  std::uint64_t ts;
};
struct FlowPair {  // one arrow, identified by the correlation id
  std::uint32_t id;
  FlowHostPoint host;
  FlowDevicePoint device;
};

class FlowPairing {
 public:
  static constexpr std::size_t kMaxPending = 1u << 20;
  using HostPoint = FlowHostPoint;
  using DevicePoint = FlowDevicePoint;
  using Pair = FlowPair;

  // A runtime API call. `api_name` decides whether it can start device work (launches,
  // copies, fills); others are never kept. The pair when its device side came first.
  std::optional<Pair> on_api(std::uint32_t correlation, const char* api_name, HostPoint host);
  // A kernel, copy or fill. The pair when its launch came first. Later activities with the
  // same id (a graph's kernels) do not pair again: the first one wins.
  std::optional<Pair> on_device(std::uint32_t correlation, DevicePoint device);

 private:
  std::unordered_map<std::uint32_t, HostPoint> pending_api_;
  std::unordered_map<std::uint32_t, DevicePoint> pending_device_;
};

}  // namespace cudascope::exporters::detail
