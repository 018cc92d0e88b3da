#pragma once
// Blocks and pools, as PyTorch's: a Block is a piece of a segment (one cudaMalloc or one
// expandable segment), linked to its neighbours; a BlockPool holds the free blocks of one
// size class ordered by (stream, size, address) for best-fit search per stream.
// Not thread-safe: the device lock guards them.

#include "history.h"
#include "stats.h"

#include "../backend/backend.h"

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <set>
#include <utility>
#include <vector>

namespace cudascope::cuda::detail::alloc {

constexpr std::size_t kMinBlockSize = 512;        // every size is rounded to 512 bytes
constexpr std::size_t kSmallSize = 1 << 20;       // the largest small-pool request
constexpr std::size_t kSmallBuffer = 2 << 20;     // small requests share 2 MiB segments
constexpr std::size_t kLargeBuffer = 20 << 20;    // 1-10 MiB requests share 20 MiB segments
constexpr std::size_t kMinLargeAlloc = 10 << 20;  // larger requests get their own segment
constexpr std::size_t kRoundLarge = 2 << 20;      // rounded to 2 MiB
// The largest request the rounding can represent: its block size and its segment size both
// fit a size_t. Larger ones (a -1 taken as a size) are refused, never wrapped round to a
// small block.
constexpr std::size_t kMaxRequestSize = SIZE_MAX / kRoundLarge * kRoundLarge;

class ExpandableSegment;
struct BlockPool;
struct Block;

struct StreamUse {
  StreamHandle handle;
  std::int64_t id;
  int device;
  friend bool operator==(const StreamUse& a, const StreamUse& b) { return a.handle == b.handle && a.device == b.device; }
};

// Search key: (stream, size, address), compared as PyTorch's BlockComparatorSize.
struct SizeKey {
  StreamHandle stream;
  std::size_t size;
  std::uintptr_t ptr;
};

struct BySize {
  using is_transparent = void;
  static SizeKey key(const Block* b) noexcept;
  static bool less(const SizeKey& a, const SizeKey& b) noexcept {
    const auto sa = reinterpret_cast<std::uintptr_t>(a.stream), sb = reinterpret_cast<std::uintptr_t>(b.stream);
    if (sa != sb) return sa < sb;
    if (a.size != b.size) return a.size < b.size;
    return a.ptr < b.ptr;
  }
  bool operator()(const Block* a, const Block* b) const noexcept { return less(key(a), key(b)); }
  bool operator()(const Block* a, const SizeKey& b) const noexcept { return less(key(a), b); }
  bool operator()(const SizeKey& a, const Block* b) const noexcept { return less(a, key(b)); }
};

// (stream, address), as PyTorch's BlockComparatorAddress (unmapped stretches).
struct ByAddress {
  using is_transparent = void;
  static std::pair<std::uintptr_t, std::uintptr_t> key(const Block* b) noexcept;
  bool operator()(const Block* a, const Block* b) const noexcept { return key(a) < key(b); }
  bool operator()(const Block* a, const SizeKey& b) const noexcept {
    return key(a) < std::pair{reinterpret_cast<std::uintptr_t>(b.stream), b.ptr};
  }
  bool operator()(const SizeKey& a, const Block* b) const noexcept {
    return std::pair{reinterpret_cast<std::uintptr_t>(a.stream), a.ptr} < key(b);
  }
};

using SizeSet = std::pmr::set<Block*, BySize>;

struct Block {
  int device = 0;
  StreamHandle stream = nullptr;
  std::int64_t stream_id = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;
  BlockPool* pool = nullptr;
  char* ptr = nullptr;
  bool allocated = false;
  bool mapped = true;  // false: an unmapped stretch of an expandable segment
  Block* prev = nullptr;
  Block* next = nullptr;
  int event_count = 0;
  std::int64_t gc_count_base = 0;
  // Added to ptr when ordering blocks of equal size (best-fit ties go to the lower
  // address). 0 except in replays on sim, where it maps the segment to the address the
  // recording GPU gave it, so ties break as they did there.
  std::uintptr_t order_delta = 0;
  std::vector<StreamUse> stream_uses;
  ExpandableSegment* expandable = nullptr;
  StreamStats* stream_stats = nullptr;
  ContextPtr context_when_allocated;
  ContextPtr context_when_segment_allocated;  // head block of a segment only
  // This block's node of its pool's size set while the block is out of the set: taking a
  // block out and putting it back (every cached malloc and free) then allocates nothing.
  SizeSet::node_type size_node;

  bool is_split() const noexcept { return prev != nullptr || next != nullptr; }
};

inline SizeKey BySize::key(const Block* b) noexcept {
  return {b->stream, b->size, reinterpret_cast<std::uintptr_t>(b->ptr) + b->order_delta};
}

inline std::pair<std::uintptr_t, std::uintptr_t> ByAddress::key(const Block* b) noexcept {
  return {reinterpret_cast<std::uintptr_t>(b->stream), reinterpret_cast<std::uintptr_t>(b->ptr)};
}

struct PrivatePool;

struct BlockPool {
  BlockPool(bool small, std::pmr::memory_resource* nodes, PrivatePool* owner = nullptr)
      : blocks(nodes), unmapped(nodes), is_small(small), owner(owner) {}
  SizeSet blocks;
  std::pmr::set<Block*, ByAddress> unmapped;
  const bool is_small;
  PrivatePool* const owner;  // the CUDA graph pool holding this one; nullptr: the device's own
  std::int64_t get_free_blocks_call_count = 0;

  void insert(Block* block) {
    block->gc_count_base = get_free_blocks_call_count;
    if (block->size_node.empty()) {
      blocks.insert(block);
    } else {
      blocks.insert(std::move(block->size_node));
    }
  }
  // Takes the block at `it` out of the set, keeping its node in the block.
  Block* take(SizeSet::const_iterator it) {
    Block* block = *it;
    block->size_node = blocks.extract(it);
    return block;
  }
  // Takes `block` out of the set (a no-op when it is not there).
  void remove(Block* block) {
    if (auto node = blocks.extract(block)) block->size_node = std::move(node);
  }
  int stat_index() const noexcept { return is_small ? kSmallPool : kLargePool; }
};

// A memory pool of CUDA graphs (PyTorch's PrivatePool): the blocks that captures allocate
// into it, kept apart from the device's pools so that no allocation outside the graphs reuses
// memory a replay writes. use_count: the graphs (and captures underway) using it; at 0 the pool
// is freeable and empty_cache returns its unused segments. segment_count: its segments still
// held (PyTorch's cudaMalloc_count); the pool is forgotten when both are 0.
using MempoolId = std::pair<unsigned long long, unsigned long long>;

struct PrivatePool {
  PrivatePool(MempoolId id, std::pmr::memory_resource* nodes)
      : id(id), large(false, nodes, this), small(true, nodes, this) {}
  PrivatePool(const PrivatePool&) = delete;
  PrivatePool& operator=(const PrivatePool&) = delete;
  const MempoolId id;
  int use_count = 1;
  int segment_count = 0;
  BlockPool large;
  BlockPool small;
};

// Blocks come from a free list: the hot path does no malloc for them.
class BlockArena {
 public:
  BlockArena() = default;
  BlockArena(const BlockArena&) = delete;
  BlockArena& operator=(const BlockArena&) = delete;
  ~BlockArena() {
    for (Block* b : free_) delete b;
  }
  Block* make() {
    if (free_.empty()) return new Block();
    Block* b = free_.back();
    free_.pop_back();
    return b;
  }
  // Resets only what a reused Block must not carry over (cheaper than assigning Block{}).
  void recycle(Block* b) {
    b->allocated = false;
    b->mapped = true;
    b->prev = b->next = nullptr;
    b->event_count = 0;
    b->requested_size = 0;
    b->expandable = nullptr;
    b->order_delta = 0;
    b->stream_uses.clear();
    b->context_when_allocated = {};
    b->context_when_segment_allocated = {};
    free_.push_back(b);
  }

 private:
  std::vector<Block*> free_;
};

}  // namespace cudascope::cuda::detail::alloc
