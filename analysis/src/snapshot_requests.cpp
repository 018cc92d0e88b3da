#include <cudascope/analysis/snapshot_requests.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace cudascope::analysis {
namespace {

using cuda::memory::ReplayRequest;

bool releases_segment(Action a) { return a == Action::segment_free || a == Action::segment_unmap; }

// After a run of segment releases, what comes next tells whether a malloc was making room
// (it then allocates or maps a segment, or reports an OOM) or empty_cache() ran.
bool inside_malloc(Action next) {
  return next == Action::segment_alloc || next == Action::segment_map || next == Action::oom;
}

class Converter {
 public:
  Converter(const Snapshot& snap, int device) : snap_(snap), range_(snap.device_trace(device)) {
    out_.device = device;
    out_.trace_entries = range_.size();
  }

  SnapshotRequests run() {
    bool any_completed = false;
    for (uint32_t i = range_.begin; i < range_.end; ++i) any_completed |= snap_.trace[i].action == Action::free_completed;
    const Action free_action = any_completed ? Action::free_completed : Action::free_requested;
    out_.used_free_requested = !any_completed;
    bool all_aligned = true;
    for (uint32_t i = range_.begin; i < range_.end; ++i) {
      const TraceEntry& e = snap_.trace[i];
      if (e.action == Action::alloc) {
        if (e.size == 0) continue;  // PyTorch returns nullptr without recording; nothing to replay
        all_aligned &= e.size % 512 == 0;
        alloc(i, e);
      } else if (e.action == free_action) {
        free(i, e);
      } else if (e.action == Action::segment_alloc) {
        segments_.insert(e.addr);
      } else if (releases_segment(e.action)) {
        if (e.action == Action::segment_free && !segments_.erase(e.addr)) ++out_.segments_before_trace;
        const bool run_ends = i + 1 == range_.end || !releases_segment(snap_.trace[i + 1].action);
        if (run_ends && (i + 1 == range_.end || !inside_malloc(snap_.trace[i + 1].action))) {
          push({ReplayRequest::Kind::empty_cache, 0, 0, 0}, i);
          ++out_.empty_cache_calls;
        }
      }
    }
    out_.sizes_all_512_aligned = all_aligned && !out_.requests.empty();
    final_state();
    prepend_live_at_start();
    out_.streams = stream_index_.size();
    return std::move(out_);
  }

 private:
  struct StartBlock {
    uint64_t address;
    uint64_t size;
    uint64_t id;
  };

  void push(ReplayRequest r, uint32_t entry) {
    out_.requests.push_back(r);
    out_.entry.push_back(entry);
  }

  uint8_t stream_of(const TraceEntry& e) {
    auto [it, added] = stream_index_.try_emplace(e.stream, static_cast<uint8_t>(0));
    if (added) {
      if (stream_index_.size() > 65)
        throw std::runtime_error(snap_.source + ": the trace of device " + std::to_string(out_.device) +
                                 " uses more than 65 streams; a replay drives at most 65");
      it->second = static_cast<uint8_t>(stream_index_.size() - 1);
    }
    return it->second;
  }

  void alloc(uint32_t i, const TraceEntry& e) {
    auto [it, added] = live_.try_emplace(e.addr, next_id_);
    if (!added) {  // the free of the block that was here is missing
      ++out_.mismatched_entries;
      push({ReplayRequest::Kind::free, 0, it->second, 0}, i);
      it->second = next_id_;
    }
    push({ReplayRequest::Kind::alloc, stream_of(e), next_id_++, e.size}, i);
  }

  void free(uint32_t i, const TraceEntry& e) {
    auto it = live_.find(e.addr);
    uint64_t id;
    if (it != live_.end()) {
      id = it->second;
      live_.erase(it);
    } else {  // allocated before the first entry
      id = next_id_++;
      start_.push_back({e.addr, e.size, id});
      start_streams_.push_back(stream_of(e));
    }
    push({ReplayRequest::Kind::free, 0, id, 0}, i);
  }

  // Blocks allocated in the final state that the trace never allocated were live throughout;
  // segments there that the trace never allocated were reserved before it began.
  void final_state() {
    for (const Segment& s : snap_.segments) {
      if (s.device != out_.device) continue;
      if (!s.is_expandable && !segments_.count(s.address) && range_.size() > 0) ++out_.segments_before_trace;
      for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
        const Block& blk = snap_.blocks[b];
        if (blk.state == BlockState::inactive || live_.count(blk.address)) continue;
        start_.push_back({blk.address, blk.requested_size ? blk.requested_size : blk.size, next_id_++});
        start_streams_.push_back(stream_of_segment(s));
      }
    }
  }

  uint8_t stream_of_segment(const Segment& s) {
    TraceEntry e;
    e.stream = s.stream;
    return stream_of(e);
  }

  void prepend_live_at_start() {
    if (start_.empty()) return;
    std::vector<size_t> order(start_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start_[a].address < start_[b].address; });
    std::vector<ReplayRequest> requests;
    std::vector<uint32_t> entry;
    requests.reserve(out_.requests.size() + start_.size());
    entry.reserve(requests.capacity());
    for (size_t k : order) {
      requests.push_back({ReplayRequest::Kind::alloc, start_streams_[k], start_[k].id, start_[k].size});
      entry.push_back(SnapshotRequests::kBeforeTrace);
      out_.live_at_start_bytes += start_[k].size;
    }
    out_.live_at_start = start_.size();
    requests.insert(requests.end(), out_.requests.begin(), out_.requests.end());
    entry.insert(entry.end(), out_.entry.begin(), out_.entry.end());
    out_.requests = std::move(requests);
    out_.entry = std::move(entry);
  }

  const Snapshot& snap_;
  DeviceTrace range_;
  SnapshotRequests out_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address -> request id
  std::unordered_set<uint64_t> segments_;        // segment_alloc addresses not yet freed
  std::unordered_map<StreamId, uint8_t> stream_index_;
  std::vector<StartBlock> start_;
  std::vector<uint8_t> start_streams_;
  uint64_t next_id_ = 0;
};

std::string setting(const Snapshot& snap, std::string_view key) {
  for (const auto& [k, v] : snap.allocator_settings)
    if (k == key) return v;
  return {};
}

// "{1: 0, 2: 4, ...}" (any punctuation) -> PyTorch's "[1:0,2:4,...]" list, or "" when all 0.
std::string roundup_text(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string number, key;
  bool nonzero = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      number += text[i];
      continue;
    }
    if (number.empty()) continue;
    if (key.empty()) {
      key = number;
    } else {
      nonzero |= number != "0";
      pairs.emplace_back(key, number);
      key.clear();
    }
    number.clear();
  }
  if (!nonzero) return {};
  std::string out = "[";
  for (const auto& [k, v] : pairs) out += (out.size() > 1 ? "," : "") + k + ":" + v;
  return out + "]";
}

bool is_true(const std::string& v) { return v == "True" || v == "true" || v == "1"; }

}  // namespace

SnapshotRequests snapshot_requests(const Snapshot& snapshot, int device) {
  if (snapshot.device_trace(device).size() == 0)
    throw std::runtime_error(snapshot.source + ": device " + std::to_string(device) +
                             " has no trace entries (record the history with torch.cuda.memory._record_memory_history() "
                             "before the allocations of interest)");
  return Converter(snapshot, device).run();
}

int busiest_device(const Snapshot& snapshot) {
  int best = -1;
  uint32_t most = 0;
  for (const DeviceTrace& d : snapshot.devices)
    if (d.size() > most) most = d.size(), best = d.device;
  return best;
}

std::string snapshot_alloc_conf(const Snapshot& snapshot) {
  const std::string text = setting(snapshot, "PYTORCH_CUDA_ALLOC_CONF");
  if (!text.empty()) return text;
  std::vector<std::string> parts;
  const std::string split = setting(snapshot, "max_split_size");
  if (!split.empty() && split != "-1" && split.find_first_not_of("0123456789") == std::string::npos)
    parts.push_back("max_split_size_mb:" + std::to_string(std::stoull(split) >> 20));
  const std::string gc = setting(snapshot, "garbage_collection_threshold");
  if (!gc.empty() && std::strtod(gc.c_str(), nullptr) > 0.0) parts.push_back("garbage_collection_threshold:" + gc);
  if (is_true(setting(snapshot, "expandable_segments"))) parts.push_back("expandable_segments:True");
  if (const std::string r = roundup_text(setting(snapshot, "roundup_power2_divisions")); !r.empty())
    parts.push_back("roundup_power2_divisions:" + r);
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

}  // namespace cudascope::analysis
