// Vector clocks of streams, events and the host (CSAN's rules).
#include "stream_clocks.h"

#include <algorithm>

namespace cudascope::cuda::sanitizer::detail {

Clock& StreamClocks::stream(const StreamKey& key) {
  auto found = streams_.find(key);
  if (found != streams_.end()) return found->second;
  host_.try_emplace(key, 0);
  return streams_.emplace(key, host_).first->second;
}

void StreamClocks::merge(Clock& into, const Clock& other) {
  for (const auto& [key, seq] : other) {
    std::uint64_t& mine = into[key];
    mine = std::max(mine, seq);
  }
}

void StreamClocks::everyone_merges(const Clock& other) {
  // `other` may be one of the streams' own clocks: merge a copy.
  const Clock snapshot = other;
  for (auto& [key, clock] : streams_) merge(clock, snapshot);
  merge(host_, snapshot);
}

void StreamClocks::advance(const StreamKey& key, std::uint64_t seq_num) { stream(key)[key] = seq_num; }

bool StreamClocks::ordered_after(const StreamKey& current, std::uint64_t seq_num, const StreamKey& other) {
  stream(other);
  const Clock& clock = stream(current);
  const auto found = clock.find(other);
  return found != clock.end() && seq_num <= found->second;
}

void StreamClocks::record_event(const void* event, const StreamKey& key) { events_[event] = stream(key); }

void StreamClocks::wait_event(const StreamKey& key, const void* event) {
  Clock& clock = stream(key);
  const auto found = events_.find(event);
  if (found != events_.end()) merge(clock, found->second);
}

void StreamClocks::synchronize_event(const void* event) {
  const auto found = events_.find(event);
  if (found != events_.end()) everyone_merges(found->second);
}

void StreamClocks::synchronize_stream(const StreamKey& key) { everyone_merges(stream(key)); }

void StreamClocks::synchronize_device(int device) {
  // The host has seen every kernel queued so far on the device's streams complete.
  for (auto& [key, clock] : streams_) {
    if (key.first != device) continue;
    std::uint64_t& seen = host_[key];
    seen = std::max(seen, clock[key]);
  }
  everyone_merges(host_);
}

}  // namespace cudascope::cuda::sanitizer::detail
