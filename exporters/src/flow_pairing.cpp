#include "flow_pairing.h"

#include <cstring>

namespace cudascope::exporters::detail {

std::optional<FlowPairing::Pair> FlowPairing::on_api(std::uint32_t correlation, const char* api_name, HostPoint host) {
  if (auto it = pending_device_.find(correlation); it != pending_device_.end()) {
    const Pair pair{correlation, host, it->second};
    pending_device_.erase(it);
    return pair;
  }
  // Only calls that put work on a stream can have a device end.
  if (api_name == nullptr ||
      !(std::strstr(api_name, "Launch") || std::strstr(api_name, "Memcpy") || std::strstr(api_name, "Memset")))
    return std::nullopt;
  if (pending_api_.size() >= kMaxPending) pending_api_.clear();
  pending_api_[correlation] = host;
  return std::nullopt;
}

std::optional<FlowPairing::Pair> FlowPairing::on_device(std::uint32_t correlation, DevicePoint device) {
  if (auto it = pending_api_.find(correlation); it != pending_api_.end()) {
    const Pair pair{correlation, it->second, device};
    pending_api_.erase(it);
    return pair;
  }
  if (pending_device_.size() >= kMaxPending) pending_device_.clear();
  pending_device_.emplace(correlation, device);
  return std::nullopt;
}

}  // namespace cudascope::exporters::detail
