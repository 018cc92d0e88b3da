#include "snapshot_builder.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace cudascope::analysis::detail {

StreamId SnapshotBuilder::stream(uint64_t raw) {
  if (!snap_.streams.empty() && raw == snap_.streams[last_stream_]) return last_stream_;  // runs of one stream
  auto [it, inserted] = stream_index_.try_emplace(raw, static_cast<StreamId>(snap_.streams.size()));
  if (inserted) {
    if (snap_.streams.size() >= UINT16_MAX) return 0;  // absurd input: fold into stream 0
    snap_.streams.push_back(raw);
  }
  last_stream_ = it->second;
  return it->second;
}

void SnapshotBuilder::add_entry(const TraceEntry& entry) {
  if (entry_chunks_.empty() || entry_chunks_.back().size() == entry_chunks_.back().capacity()) {
    const size_t last = entry_chunks_.empty() ? 0 : entry_chunks_.back().capacity();
    entry_chunks_.emplace_back();
    entry_chunks_.back().reserve(std::clamp<size_t>(2 * last, kFirstChunkEntries, kLargestChunkEntries));
  }
  entry_chunks_.back().push_back(entry);
  ++entry_count_;
}

void SnapshotBuilder::gather_entries() {
  if (entry_chunks_.empty()) return;
  snap_.trace.reserve(entry_count_);  // entries gathered before stay: indices match entry_count()
  for (auto& chunk : entry_chunks_) {
    snap_.trace.insert(snap_.trace.end(), chunk.begin(), chunk.end());
    std::vector<TraceEntry>().swap(chunk);  // freed as soon as it is copied
  }
  entry_chunks_.clear();
}

namespace {

// The schema's sizes and addresses are unsigned: a negative number in a file wraps to a huge
// one, which summed would read as "reserved 16777216 TiB". Values from 2^63 up are refused.
bool wrapped_negative(uint64_t value) { return static_cast<int64_t>(value) < 0; }

// More memory than any device has (the largest GPUs hold a few hundred GB; this is 2^44,
// 16 TiB): a segment, block or allocation this large, or a device's segments summing past
// it, is a damaged number, not a figure to report.
constexpr uint64_t kMaxDeviceBytes = uint64_t{1} << 44;

std::string number(uint64_t value) {
  return wrapped_negative(value) ? std::to_string(static_cast<int64_t>(value)) : std::to_string(value);
}

// What is wrong with segment `s` (index `index` in the file) and its blocks, or "": negative
// sizes or addresses, and blocks that start before the previous one ends or reach past the
// segment (PyTorch lists a segment's blocks in address order, tiling it).
std::string segment_problem(const Segment& s, size_t index, const std::vector<Block>& blocks) {
  const std::string where = "segment " + std::to_string(index) + " (device " + std::to_string(s.device) + ", address " +
                            number(s.address) + ")";
  const std::pair<const char*, uint64_t> fields[] = {{"address", s.address},
                                                     {"total_size", s.total_size},
                                                     {"allocated_size", s.allocated_size},
                                                     {"active_size", s.active_size},
                                                     {"requested_size", s.requested_size}};
  for (const auto& [name, value] : fields) {
    if (wrapped_negative(value)) return where + ": " + name + " is negative (" + number(value) + ")";
  }
  if (s.total_size > kMaxDeviceBytes)
    return where + ": total_size " + std::to_string(s.total_size) + " is larger than any device's memory (over " +
           std::to_string(kMaxDeviceBytes) + " bytes)";
  // Allocated, active and requested bytes are parts of the segment (allocated <= active <=
  // total in PyTorch): more allocated than reserved cannot be.
  for (const auto& [name, value] : {fields[2], fields[3], fields[4]}) {
    if (value > s.total_size)
      return where + ": " + name + " " + std::to_string(value) + " is larger than the segment's total_size " +
             std::to_string(s.total_size);
  }
  const uint64_t end = s.address + s.total_size;  // both below 2^63: no overflow
  uint64_t previous_end = s.address;
  for (uint32_t k = 0; k < s.block_count; ++k) {
    const Block& b = blocks[s.first_block + k];
    const std::string block = where + ": block " + std::to_string(k);
    if (wrapped_negative(b.size)) return block + ": size is negative (" + number(b.size) + ")";
    if (wrapped_negative(b.requested_size)) return block + ": requested_size is negative (" + number(b.requested_size) + ")";
    if (b.requested_size > kMaxDeviceBytes)
      return block + ": requested_size " + std::to_string(b.requested_size) + " is larger than any device's memory";
    const uint64_t start = b.address == kUnknownAddress ? previous_end : b.address;
    if (wrapped_negative(start)) return block + ": address is negative (" + number(start) + ")";
    if (start < previous_end) {
      return block + " at " + std::to_string(start) + (k == 0 ? " starts before its segment" : " overlaps the block before it");
    }
    if (start + b.size > end) {
      return block + " [" + std::to_string(start) + ", " + std::to_string(start + b.size) +
             ") reaches past the segment's end " + std::to_string(end);
    }
    previous_end = start + b.size;
  }
  return {};
}

}  // namespace

Result<Snapshot> SnapshotBuilder::finish(uint64_t end_offset) {
  gather_entries();
  auto& segments = snap_.segments;
  missing.resize(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    if (uint64_t{s.first_block} + s.block_count > snap_.blocks.size())
      return LoadError{snap_.source, end_offset, "expected segment blocks within the block list"};
    if (std::string problem = segment_problem(s, i, snap_.blocks); !problem.empty()) {
      return LoadError{snap_.source, end_offset, std::move(problem)};
    }
  }
  // Each device's segments together: no device holds more than kMaxDeviceBytes.
  {
    std::vector<std::pair<int, uint64_t>> reserved;  // (device, bytes), few devices
    for (const Segment& s : segments) {
      auto it = std::find_if(reserved.begin(), reserved.end(), [&](const auto& r) { return r.first == s.device; });
      if (it == reserved.end()) it = reserved.insert(reserved.end(), {s.device, 0});
      it->second += s.total_size;  // each at most 2^44, at most 2^32 segments: no overflow
      if (it->second > kMaxDeviceBytes)
        return LoadError{snap_.source, end_offset,
                         "device " + std::to_string(s.device) + ": its segments reserve " + std::to_string(it->second) +
                             " bytes, more than any device's memory (over " + std::to_string(kMaxDeviceBytes) +
                             " bytes)"};
    }
  }
  for (size_t i = 0; i < snap_.trace.size(); ++i) {
    const TraceEntry& e = snap_.trace[i];
    if (wrapped_negative(e.size)) {
      return LoadError{snap_.source, end_offset,
                       "trace entry " + std::to_string(i) + ": size is negative (" + number(e.size) + ")"};
    }
    // A request that ran out of memory may ask for anything; what was allocated, freed or
    // mapped cannot be larger than a device.
    if (e.size > kMaxDeviceBytes && e.action != Action::oom) {
      return LoadError{snap_.source, end_offset,
                       "trace entry " + std::to_string(i) + ": size " + std::to_string(e.size) +
                           " is larger than any device's memory (over " + std::to_string(kMaxDeviceBytes) + " bytes)"};
    }
  }

  // Order segments by (device, address) and their blocks with them.
  std::vector<uint32_t> order(segments.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::pair(segments[a].device, segments[a].address) < std::pair(segments[b].device, segments[b].address);
  });
  std::vector<Segment> sorted_segments;
  std::vector<Missing> sorted_missing;
  std::vector<Block> sorted_blocks;
  sorted_segments.reserve(segments.size());
  sorted_blocks.reserve(snap_.blocks.size());
  for (uint32_t i : order) {
    Segment s = segments[i];
    const auto first = snap_.blocks.begin() + s.first_block;
    s.first_block = static_cast<uint32_t>(sorted_blocks.size());
    sorted_blocks.insert(sorted_blocks.end(), first, first + s.block_count);
    uint64_t next = s.address;
    uint64_t allocated = 0, active = 0, requested = 0;
    for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
      Block& block = sorted_blocks[b];
      if (block.address == kUnknownAddress) block.address = next;
      next = block.address + block.size;
      block.segment = static_cast<uint32_t>(sorted_segments.size());
      if (block.state == BlockState::active_allocated) allocated += block.size;
      if (block.state != BlockState::inactive) {
        active += block.size;
        requested += block.requested_size;
      }
    }
    const Missing m = missing[i];
    if (m.allocated) s.allocated_size = allocated;
    if (m.active) s.active_size = active;
    if (m.requested) s.requested_size = requested;
    sorted_segments.push_back(s);
    sorted_missing.push_back(m);
  }
  segments = std::move(sorted_segments);
  snap_.blocks = std::move(sorted_blocks);
  missing = std::move(sorted_missing);

  // Per-device trace ranges.
  snap_.devices.clear();
  auto& trace = snap_.trace;
  for (uint32_t i = 0; i < trace.size();) {
    uint32_t j = i;
    while (j < trace.size() && trace[j].device == trace[i].device) ++j;
    for (const auto& d : snap_.devices)
      if (d.device == trace[i].device)
        return LoadError{snap_.source, end_offset, "expected the trace entries of each device to be contiguous"};
    snap_.devices.push_back(DeviceTrace{trace[i].device, i, j});
    i = j;
  }
  for (uint32_t i = 0; i < trace.size(); ++i)
    if (trace[i].action == Action::oom && std::none_of(snap_.oom_device_free.begin(), snap_.oom_device_free.end(),
                                                        [&](const auto& p) { return p.first == i; }))
      snap_.oom_device_free.emplace_back(i, 0);
  return std::move(snap_);
}

void SnapshotBuilder::number_entries_without_times() {
  gather_entries();
  snap_.has_times = false;
  int16_t device = INT16_MIN;
  int64_t t = 0;
  for (auto& e : snap_.trace) {
    if (e.device != device) device = e.device, t = 0;
    e.time_us = t++;
  }
}

}  // namespace cudascope::analysis::detail
