#pragma once
// A reference model of the caching allocator's statistics: PyTorch's algorithm written as
// plainly as it can be (segments as vectors of blocks, best fit by a linear scan, stats as
// four integers each), to be fed the same operations as the real allocator and compared
// with memory_stats() key by key.
//
// Scope: one device; any number of streams; the default configuration or max_split_size;
// an optional memory limit (so the OOM path runs: release_available_cached_blocks,
// release_cached_blocks, the retry, num_ooms); empty_cache and the two resets. Left out,
// because they need events or the driver's virtual memory, or are arithmetic this model
// would only copy: record_stream, expandable segments, garbage collection and
// roundup_power2_divisions (the property test covers them by recount).
//
// The model does not choose a new segment's address: the caller passes the pointer the real
// allocator returned, and the model uses it only when it decides that a new segment is
// needed. Whenever it reuses a cached block it predicts the address itself.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cudascope::testing::model {

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kMinBlock = 512;         // every size is rounded up to this
constexpr std::uint64_t kSmallSize = kMiB;       // small pool: requests up to 1 MiB
constexpr std::uint64_t kSmallBuffer = 2 * kMiB; // small pool segment size
constexpr std::uint64_t kLargeBuffer = 20 * kMiB;   // large segment for requests under 10 MiB
constexpr std::uint64_t kMinLargeAlloc = 10 * kMiB;
constexpr std::uint64_t kRoundLarge = 2 * kMiB;  // larger requests get their own segment in 2 MiB steps
constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();

// PyTorch's Stat: `allocated` and `freed` sum every increase and decrease.
struct Stat {
  std::int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(std::int64_t n) {
    current += n;
    allocated += n;
    peak = std::max(peak, current);
  }
  void sub(std::int64_t n) {
    current -= n;
    freed += n;
  }
};

// One statistic for all blocks and per pool; every change goes to "all" and to its pool.
struct PoolStats {
  Stat all, small, large;
  void add(bool small_pool, std::int64_t n) {
    all.add(n);
    (small_pool ? small : large).add(n);
  }
  void sub(bool small_pool, std::int64_t n) {
    all.sub(n);
    (small_pool ? small : large).sub(n);
  }
};

struct Block {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  bool allocated = false;
  std::uint64_t requested = 0;
};

struct Segment {
  std::uint64_t address = 0;
  int stream = 0;
  bool small = false;
  std::vector<Block> blocks;  // in address order, tiling the segment
  std::uint64_t size() const {
    std::uint64_t total = 0;
    for (const Block& b : blocks) total += b.size;
    return total;
  }
};

class AllocatorModel {
 public:
  // max_split_size and limit in bytes; kUnlimited for none.
  AllocatorModel(std::uint64_t max_split_size, std::uint64_t limit) : max_split_(max_split_size), limit_(limit) {}

  // malloc(size) on `stream`. `real_address` is what the allocator returned (0 when it threw
  // OutOfMemoryError). Returns the address the model expects, or nullopt for an OOM.
  // Throws std::logic_error when the model needs a new segment but the allocator gave none.
  std::optional<std::uint64_t> malloc(std::uint64_t size, int stream, std::uint64_t real_address) {
    if (size == 0) return 0;  // nullptr, no statistics
    const std::uint64_t rounded = round(size);
    const bool small = rounded <= kSmallSize;
    std::optional<Found> found = best_fit(rounded, stream, small);
    if (!found) {
      const std::uint64_t alloc_size = segment_size(rounded);
      bool ok = new_segment(alloc_size, stream, small, false, real_address);
      if (!ok && release_available(rounded, stream, small)) ok = new_segment(alloc_size, stream, small, false, real_address);
      if (!ok) {
        empty_cache();
        ok = new_segment(alloc_size, stream, small, true, real_address);
      }
      if (!ok) {
        ++num_ooms_;
        return std::nullopt;
      }
      found = Found{segments_.size() - 1, 0};
    }
    return allocate_in(*found, rounded, size);
  }

  // free(ptr) of an address the model handed out. Throws std::logic_error for any other.
  void free(std::uint64_t address) {
    for (Segment& seg : segments_) {
      for (std::size_t i = 0; i < seg.blocks.size(); ++i) {
        if (seg.blocks[i].address == address && seg.blocks[i].allocated) return free_block(seg, i);
      }
    }
    throw std::logic_error("model: free of an address it never handed out");
  }

  // empty_cache: synchronises (counted) and releases every cached segment that is one free block.
  void empty_cache() {
    ++num_sync_all_streams_;
    for (std::size_t s = segments_.size(); s-- > 0;) {
      const Segment& seg = segments_[s];
      if (seg.blocks.size() == 1 && !seg.blocks[0].allocated) release_segment(s);
    }
  }

  void reset_peak() {
    for (Stat* s : all_stats()) s->peak = s->current;
  }
  void reset_accumulated() {
    for (Stat* s : all_stats()) s->allocated = s->freed = 0;
    num_alloc_retries_ = num_ooms_ = num_sync_all_streams_ = num_device_alloc_ = num_device_free_ = 0;
  }

  // The statistics under memory_stats()'s keys.
  std::map<std::string, std::int64_t> stats() const {
    std::map<std::string, std::int64_t> out;
    auto put = [&](const std::string& key, const Stat& s) {
      out[key + ".current"] = s.current;
      out[key + ".peak"] = s.peak;
      out[key + ".allocated"] = s.allocated;
      out[key + ".freed"] = s.freed;
    };
    for (const auto& [name, pools] : named_pool_stats()) {
      put(name + ".all", pools->all);
      put(name + ".small_pool", pools->small);
      put(name + ".large_pool", pools->large);
    }
    put("oversize_allocations", oversize_allocations_);
    put("oversize_segments", oversize_segments_);
    out["num_alloc_retries"] = num_alloc_retries_;
    out["num_ooms"] = num_ooms_;
    out["num_sync_all_streams"] = num_sync_all_streams_;
    out["num_device_alloc"] = num_device_alloc_;
    out["num_device_free"] = num_device_free_;
    out["max_split_size"] = max_split_ == kUnlimited ? -1 : static_cast<std::int64_t>(max_split_);
    return out;
  }

  // The segments, sorted by address.
  std::vector<Segment> segments() const {
    std::vector<Segment> out = segments_;
    std::sort(out.begin(), out.end(), [](const Segment& a, const Segment& b) { return a.address < b.address; });
    return out;
  }

 private:
  struct Found {
    std::size_t segment;
    std::size_t block;
  };

  static std::uint64_t round(std::uint64_t size) { return (size + kMinBlock - 1) / kMinBlock * kMinBlock; }
  static std::uint64_t segment_size(std::uint64_t rounded) {
    if (rounded <= kSmallSize) return kSmallBuffer;
    if (rounded < kMinLargeAlloc) return kLargeBuffer;
    return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
  }

  // The smallest free block of the stream's pool that fits, the lowest address among equals;
  // then PyTorch's two oversize rules may refuse that one block (no second choice).
  std::optional<Found> best_fit(std::uint64_t rounded, int stream, bool small) const {
    std::optional<Found> best;
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      const Segment& seg = segments_[s];
      if (seg.stream != stream || seg.small != small) continue;
      for (std::size_t i = 0; i < seg.blocks.size(); ++i) {
        const Block& b = seg.blocks[i];
        if (b.allocated || b.size < rounded) continue;
        if (best) {
          const Block& cur = segments_[best->segment].blocks[best->block];
          if (b.size > cur.size || (b.size == cur.size && b.address > cur.address)) continue;
        }
        best = Found{s, i};
      }
    }
    if (!best) return best;
    const std::uint64_t size = segments_[best->segment].blocks[best->block].size;
    if (rounded < max_split_ && size >= max_split_) return std::nullopt;
    if (rounded >= max_split_ && size >= rounded + kLargeBuffer) return std::nullopt;
    return best;
  }

  bool new_segment(std::uint64_t size, int stream, bool small, bool retry, std::uint64_t real_address) {
    if (retry) ++num_alloc_retries_;
    if (limit_ != kUnlimited && static_cast<std::uint64_t>(reserved_bytes_.all.current) + size > limit_) return false;
    if (real_address == 0) throw std::logic_error("model: a new segment fits under the limit but the allocator ran out");
    Segment seg{real_address, stream, small, {Block{real_address, size, false, 0}}};
    segments_.push_back(seg);
    segment_.add(small, 1);
    reserved_bytes_.add(small, static_cast<std::int64_t>(size));
    if (size >= max_split_) oversize_segments_.add(1);
    ++num_device_alloc_;
    return true;
  }

  void release_segment(std::size_t s) {
    const Segment& seg = segments_[s];
    if (seg.blocks.size() != 1 || seg.blocks[0].allocated) throw std::logic_error("model: releasing a segment in use");
    const std::uint64_t size = seg.size();
    ++num_device_free_;
    segment_.sub(seg.small, 1);
    reserved_bytes_.sub(seg.small, static_cast<std::int64_t>(size));
    if (size >= max_split_) oversize_segments_.sub(1);
    segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(s));
  }

  // With max_split_size set: frees one cached oversize block of the stream's pool large
  // enough for the request (at least max_split_size), else the largest ones until enough.
  bool release_available(std::uint64_t rounded, int stream, bool small) {
    if (max_split_ == kUnlimited) return false;
    const std::uint64_t want = std::max(rounded, max_split_);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> free_blocks;  // (size, address), ascending
    for (const Segment& seg : segments_) {
      if (seg.stream != stream || seg.small != small) continue;
      for (const Block& b : seg.blocks) {
        if (!b.allocated) free_blocks.emplace_back(b.size, b.address);
      }
    }
    std::sort(free_blocks.begin(), free_blocks.end());
    for (const auto& [size, address] : free_blocks) {
      if (size >= want) {
        release_segment(segment_at(address));
        return true;
      }
    }
    std::uint64_t released = 0;
    for (auto it = free_blocks.rbegin(); it != free_blocks.rend() && released < want && it->first >= max_split_; ++it) {
      release_segment(segment_at(it->second));
      released += it->first;
    }
    return released >= want;
  }

  std::size_t segment_at(std::uint64_t address) const {
    for (std::size_t s = 0; s < segments_.size(); ++s) {
      if (segments_[s].address == address) return s;
    }
    throw std::logic_error("model: an oversize free block is not a whole segment");
  }

  bool should_split(bool small, std::uint64_t block_size, std::uint64_t rounded) const {
    const std::uint64_t remaining = block_size - rounded;
    if (small) return remaining >= kMinBlock;
    return rounded < max_split_ && remaining > kSmallSize;
  }

  std::uint64_t allocate_in(Found f, std::uint64_t rounded, std::uint64_t requested) {
    Segment& seg = segments_[f.segment];
    const bool already_split = seg.blocks.size() > 1;
    Block& block = seg.blocks[f.block];
    if (should_split(seg.small, block.size, rounded)) {
      const Block remaining{block.address + rounded, block.size - rounded, false, 0};
      block.size = rounded;
      seg.blocks.insert(seg.blocks.begin() + static_cast<std::ptrdiff_t>(f.block) + 1, remaining);
      if (already_split) {
        inactive_split_bytes_.sub(seg.small, static_cast<std::int64_t>(rounded));
      } else {
        inactive_split_bytes_.add(seg.small, static_cast<std::int64_t>(remaining.size));
        inactive_split_.add(seg.small, 1);
      }
    } else if (already_split) {
      inactive_split_bytes_.sub(seg.small, static_cast<std::int64_t>(block.size));
      inactive_split_.sub(seg.small, 1);
    }
    Block& b = seg.blocks[f.block];
    b.allocated = true;
    b.requested = requested;
    const auto size = static_cast<std::int64_t>(b.size);
    allocation_.add(seg.small, 1);
    allocated_bytes_.add(seg.small, size);
    active_.add(seg.small, 1);
    active_bytes_.add(seg.small, size);
    requested_bytes_.add(seg.small, static_cast<std::int64_t>(requested));
    if (b.size >= max_split_) oversize_allocations_.add(1);
    return b.address;
  }

  // Frees block i and merges it with free neighbours; inactive_split changes by the net.
  void free_block(Segment& seg, std::size_t i) {
    Block freed = seg.blocks[i];
    const auto size = static_cast<std::int64_t>(freed.size);
    allocation_.sub(seg.small, 1);
    allocated_bytes_.sub(seg.small, size);
    if (freed.size >= max_split_) oversize_allocations_.sub(1);
    std::int64_t net_blocks = 0, net_bytes = 0;
    if (i + 1 < seg.blocks.size() && !seg.blocks[i + 1].allocated) {
      net_blocks -= 1;
      net_bytes -= static_cast<std::int64_t>(seg.blocks[i + 1].size);
      freed.size += seg.blocks[i + 1].size;
      seg.blocks.erase(seg.blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    if (i > 0 && !seg.blocks[i - 1].allocated) {
      net_blocks -= 1;
      net_bytes -= static_cast<std::int64_t>(seg.blocks[i - 1].size);
      freed.address = seg.blocks[i - 1].address;
      freed.size += seg.blocks[i - 1].size;
      seg.blocks.erase(seg.blocks.begin() + static_cast<std::ptrdiff_t>(i) - 1);
      --i;
    }
    freed.allocated = false;
    seg.blocks[i] = freed;
    if (seg.blocks.size() > 1) {
      net_blocks += 1;
      net_bytes += static_cast<std::int64_t>(freed.size);
    }
    if (net_blocks > 0) inactive_split_.add(seg.small, net_blocks);
    if (net_blocks < 0) inactive_split_.sub(seg.small, -net_blocks);
    if (net_bytes > 0) inactive_split_bytes_.add(seg.small, net_bytes);
    if (net_bytes < 0) inactive_split_bytes_.sub(seg.small, -net_bytes);
    active_.sub(seg.small, 1);
    active_bytes_.sub(seg.small, size);
    requested_bytes_.sub(seg.small, static_cast<std::int64_t>(freed.requested));
  }

  std::vector<std::pair<std::string, const PoolStats*>> named_pool_stats() const {
    return {{"allocation", &allocation_},       {"segment", &segment_},
            {"active", &active_},               {"inactive_split", &inactive_split_},
            {"allocated_bytes", &allocated_bytes_}, {"reserved_bytes", &reserved_bytes_},
            {"active_bytes", &active_bytes_},   {"inactive_split_bytes", &inactive_split_bytes_},
            {"requested_bytes", &requested_bytes_}};
  }
  std::vector<Stat*> all_stats() {
    std::vector<Stat*> out{&oversize_allocations_, &oversize_segments_};
    for (PoolStats* p : {&allocation_, &segment_, &active_, &inactive_split_, &allocated_bytes_, &reserved_bytes_,
                         &active_bytes_, &inactive_split_bytes_, &requested_bytes_}) {
      out.insert(out.end(), {&p->all, &p->small, &p->large});
    }
    return out;
  }

  std::uint64_t max_split_;
  std::uint64_t limit_;
  std::vector<Segment> segments_;
  PoolStats allocation_, segment_, active_, inactive_split_, allocated_bytes_, reserved_bytes_, active_bytes_,
      inactive_split_bytes_, requested_bytes_;
  Stat oversize_allocations_, oversize_segments_;
  std::int64_t num_alloc_retries_ = 0, num_ooms_ = 0, num_sync_all_streams_ = 0, num_device_alloc_ = 0,
               num_device_free_ = 0;
};

}  // namespace cudascope::testing::model
