// The replay driver (replay_session.h) and replay_requests(), which samples the allocator's
// state at its peak while it drives.
#include "replay_session.h"

#include "block_pool.h"
#include "caching_allocator.h"

#include "../check.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>

#include <algorithm>

namespace cudascope::cuda::memory {

ReplaySession::ReplaySession(int device, const AllocatorConfig& config, std::optional<std::size_t> memory_limit,
                             std::size_t streams, const std::string& name)
    : device_(device), saved_(allocator_settings()) {
  CUDASCOPE_CHECK(detail::alloc::live_allocations(device) == 0, error_code::kInvalidValue, "replay",
                  name + ": device " + std::to_string(device) + " has live allocations; a replay needs a clean allocator");
  // A fresh allocator: nothing cached (released under the configuration that cached it,
  // since oversize counts depend on max_split_size), counters at zero.
  cuda::empty_cache();
  detail::alloc::set_config(config);
  reset_accumulated_memory_stats(device);
  reset_peak_memory_stats(device);
  if (memory_limit) set_per_process_memory_limit(*memory_limit, device);
  streams_.push_back(current_stream(device));
  while (streams_.size() < streams) streams_.emplace_back(device_);
}

ReplaySession::~ReplaySession() {
  for (auto& [id, ptr] : live_) caching_allocator_delete(ptr);
  live_.clear();
  cuda::empty_cache();
  detail::alloc::set_config(saved_);
  detail::alloc::clear_memory_limit(device_);
  reset_accumulated_memory_stats(device_);
  reset_peak_memory_stats(device_);
}

bool ReplaySession::alloc(std::uint64_t id, std::size_t size, std::size_t stream) {
  while (streams_.size() <= stream) streams_.emplace_back(device_);
  try {
    void* ptr = caching_allocator_alloc(size, device_, streams_[stream]);
    live_[id] = ptr;
    return true;
  } catch (const OutOfMemoryError&) {
    return false;
  }
}

void ReplaySession::free(std::uint64_t id) {
  auto it = live_.find(id);
  if (it == live_.end()) return;
  caching_allocator_delete(it->second);
  live_.erase(it);
}

void ReplaySession::empty_cache() { cuda::empty_cache(); }
void ReplaySession::reset_peak() { reset_peak_memory_stats(device_); }
void ReplaySession::reset_accumulated() { reset_accumulated_memory_stats(device_); }

ReplayOutcome replay_requests(const std::vector<ReplayRequest>& requests, const ReplayRequestsOptions& options) {
  const std::string& name = options.name;
  const auto& progress = options.progress;
  const AllocatorConfig config = AllocatorConfig::parse(options.conf, name);
  ReplayOutcome out;
  std::size_t streams = 1;
  for (const ReplayRequest& r : requests) streams = std::max<std::size_t>(streams, r.stream + std::size_t{1});
  ReplaySession session(current_device(), config, options.memory_limit, streams, name);
  const int device = session.device();
  constexpr std::size_t kProgressEvery = 1 << 16;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReplayRequest& r = requests[i];
    switch (r.kind) {
      case ReplayRequest::Kind::alloc:
        CUDASCOPE_CHECK(r.stream <= 64, error_code::kInvalidValue, "replay",
                        name + ": request " + std::to_string(i) + ": stream index out of range");
        // The allocator refuses it too; here the message names the request.
        CUDASCOPE_CHECK(r.size <= detail::alloc::kMaxRequestSize, error_code::kInvalidValue, "replay",
                        name + ": request " + std::to_string(i) + ": size " + std::to_string(r.size) +
                            " bytes is more than the allocator can round (at most " +
                            std::to_string(detail::alloc::kMaxRequestSize) + ")");
        if (!session.alloc(r.id, r.size, r.stream)) out.oom_requests.push_back(i);
        break;
      case ReplayRequest::Kind::free:
        session.free(r.id);
        break;
      case ReplayRequest::Kind::empty_cache:
        session.empty_cache();
        break;
    }
    // Reserved bytes only grow inside an alloc; the state is sampled (a scan of the free
    // blocks) only when they reach a new peak, a few times per segment at most.
    if (r.kind == ReplayRequest::Kind::alloc) {
      const detail::alloc::Usage u = detail::alloc::usage(device);
      if (u.reserved > out.peak_reserved) {
        out.peak_reserved = u.reserved;
        out.peak_request = i;
        out.allocated_at_peak = u.allocated;
        out.inactive_at_peak = u.reserved - u.active;
        out.largest_free_block_at_peak = static_cast<std::int64_t>(detail::alloc::largest_free_block(device));
      }
    }
    if (progress && (i + 1) % kProgressEvery == 0) progress(i + 1);
  }
  out.stats = memory_stats(device);
  if (progress) progress(requests.size());
  return out;
}

}  // namespace cudascope::cuda::memory
