// memory_stats() keys: torch.cuda.memory_stats flattens the nested dict of the C++
// DeviceStats with '.' and sorts the keys; std::map gives the same order.
#include "stats.h"

namespace cudascope::cuda::detail::alloc {
namespace {

void put(std::map<std::string, std::int64_t>& out, const std::string& prefix, const Stat& s) {
  out[prefix + ".current"] = s.current;
  out[prefix + ".peak"] = s.peak;
  out[prefix + ".allocated"] = s.allocated();
  out[prefix + ".freed"] = s.freed;
}

void put(std::map<std::string, std::int64_t>& out, const std::string& name, const StatArray& a) {
  put(out, name + ".all", a[kAggregate]);
  put(out, name + ".small_pool", a[kSmallPool]);
  put(out, name + ".large_pool", a[kLargePool]);
}

template <typename F>
void each_array(DeviceStats& s, F f) {
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                       &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes}) {
    for (Stat& stat : a->stat) f(stat);
  }
}

}  // namespace

void DeviceStats::reset_accumulated() noexcept {
  each_array(*this, [](Stat& s) { s.reset_accumulated(); });
  num_alloc_retries = num_ooms = num_sync_all_streams = num_device_alloc = num_device_free = 0;
  oversize_allocations.reset_accumulated();
  oversize_segments.reset_accumulated();
}

void DeviceStats::reset_peak() noexcept {
  each_array(*this, [](Stat& s) { s.reset_peak(); });
  oversize_allocations.reset_peak();
  oversize_segments.reset_peak();
}

std::map<std::string, std::int64_t> to_stats_map(const DeviceStats& s, std::int64_t max_split_size) {
  std::map<std::string, std::int64_t> out;
  put(out, "allocation", s.allocation);
  put(out, "segment", s.segment);
  put(out, "active", s.active);
  put(out, "inactive_split", s.inactive_split);
  put(out, "allocated_bytes", s.allocated_bytes);
  put(out, "reserved_bytes", s.reserved_bytes);
  put(out, "active_bytes", s.active_bytes);
  put(out, "inactive_split_bytes", s.inactive_split_bytes);
  put(out, "requested_bytes", s.requested_bytes);
  out["num_alloc_retries"] = s.num_alloc_retries;
  out["num_ooms"] = s.num_ooms;
  put(out, "oversize_allocations", s.oversize_allocations);
  put(out, "oversize_segments", s.oversize_segments);
  out["num_sync_all_streams"] = s.num_sync_all_streams;
  out["num_device_alloc"] = s.num_device_alloc;
  out["num_device_free"] = s.num_device_free;
  out["max_split_size"] = max_split_size;
  return out;
}

namespace {
MemoryStat to_public(const Stat& s) { return {s.current, s.peak, s.allocated(), s.freed}; }
void to_public(const StatArray& a, AllocatorStats::PerPool& out) {
  for (int pool = 0; pool < 3; ++pool) out[pool] = to_public(a[pool]);
}
}  // namespace

AllocatorStats to_public(const DeviceStats& s) {
  AllocatorStats out;
  to_public(s.allocation, out.allocation);
  to_public(s.segment, out.segment);
  to_public(s.active, out.active);
  to_public(s.inactive_split, out.inactive_split);
  to_public(s.allocated_bytes, out.allocated_bytes);
  to_public(s.reserved_bytes, out.reserved_bytes);
  to_public(s.active_bytes, out.active_bytes);
  to_public(s.inactive_split_bytes, out.inactive_split_bytes);
  to_public(s.requested_bytes, out.requested_bytes);
  out.num_alloc_retries = s.num_alloc_retries;
  out.num_ooms = s.num_ooms;
  out.num_sync_all_streams = s.num_sync_all_streams;
  out.num_device_alloc = s.num_device_alloc;
  out.num_device_free = s.num_device_free;
  return out;
}

StreamAllocatorStats to_public(const StreamStats& s) {
  return {to_public(s.allocation), to_public(s.allocated_bytes), to_public(s.requested_bytes), to_public(s.active),
          to_public(s.active_bytes),  to_public(s.segment),         to_public(s.reserved_bytes)};
}

std::map<std::string, std::int64_t> to_stats_map(const StreamStats& s) {
  std::map<std::string, std::int64_t> out;
  put(out, "allocation", s.allocation);
  put(out, "allocated_bytes", s.allocated_bytes);
  put(out, "requested_bytes", s.requested_bytes);
  put(out, "active", s.active);
  put(out, "active_bytes", s.active_bytes);
  put(out, "segment", s.segment);
  put(out, "reserved_bytes", s.reserved_bytes);
  return out;
}

}  // namespace cudascope::cuda::detail::alloc
