#pragma once
// The replay driver shared by replay() (JSON lines) and replay_requests() (requests in
// memory): one fresh allocator state on one device under one configuration, requests applied
// in order, and everything put back afterwards (configuration, memory limit, statistics).
// Not thread-safe: one session per device at a time (the configuration is process-wide).

#include <cudascope/cuda/allocator_config.h>
#include <cudascope/cuda/stream.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::memory {

class ReplaySession {
 public:
  // Empties the cache, applies `config` and the optional cap on reserved bytes, resets the
  // statistics and takes `streams` streams (the current one first), as the recording process
  // did before its first request: the first Stream() creates the device's stream pool, and on a
  // GPU the driver takes device memory for each stream, so a pool created between two
  // cudaMallocs would move the second from where the recording's went. Throws cuda::Error
  // naming `name` when `device` has live allocations.
  ReplaySession(int device, const AllocatorConfig& config, std::optional<std::size_t> memory_limit,
                std::size_t streams, const std::string& name);
  // Frees what is still allocated, empties the cache and restores what the constructor changed.
  ~ReplaySession();
  ReplaySession(const ReplaySession&) = delete;
  ReplaySession& operator=(const ReplaySession&) = delete;

  // False when the allocator ran out of memory (the id then stays unallocated, as a failed
  // request leaves nothing behind). Stream 0 is the current stream, 1..64 side streams (one
  // past those taken up front is taken here).
  bool alloc(std::uint64_t id, std::size_t size, std::size_t stream);
  // A free of an id that is not allocated (its alloc failed) is ignored.
  void free(std::uint64_t id);
  void empty_cache();
  void reset_peak();
  void reset_accumulated();
  int device() const { return device_; }
  // Whether `id` is allocated now (its alloc succeeded and no free followed).
  bool holds(std::uint64_t id) const { return live_.contains(id); }

 private:
  int device_;
  AllocatorConfig saved_;
  std::vector<Stream> streams_;
  std::unordered_map<std::uint64_t, void*> live_;
};

}  // namespace cudascope::cuda::memory
