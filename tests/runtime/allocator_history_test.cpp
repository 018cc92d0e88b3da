// The allocator's history where a program makes capturing hard: frees after a thread's
// NVTX stack is destroyed, host memory running out, NVTX stacks without end, stacks that
// are not the thread's own.
#include "allocator_test_util.h"
#include "allocator/history.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace cudascope::testing {
namespace {

// The newest trace entry of `action` at `addr` in a snapshot of device 0 (a block's address
// comes back with each allocation that reuses it).
const cuda::memory::TraceEntry* find_entry(const cuda::memory::Snapshot& snap, const std::string& action, void* addr) {
  const auto& trace = snap.device_traces.at(0);
  for (auto e = trace.rbegin(); e != trace.rend(); ++e) {
    if (e->action == action && e->addr == reinterpret_cast<std::uint64_t>(addr)) return &*e;
  }
  return nullptr;
}

class AllocatorHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override { fresh_allocator(); }
  void TearDown() override {
    cuda::memory::record_memory_history(std::nullopt);
    fresh_allocator();
  }
};

// Frees its block when the thread's thread_locals are destroyed.
struct FreedAtThreadExit {
  void* block = nullptr;
  ~FreedAtThreadExit() {
    if (block != nullptr) cuda::caching_allocator_delete(block);
  }
};
thread_local FreedAtThreadExit freed_at_thread_exit;

// thread_locals are destroyed in reverse order of construction: touched before the first
// range is pushed, the holder is destroyed after the thread's NVTX stack, with a range
// still open on it. The block is allocated outside any range, so the free cannot take its
// ranges from the allocation either.
TEST_F(AllocatorHistoryTest, AFreeAfterTheThreadsRangeStackIsDestroyedKeepsNoRanges) {
  cuda::memory::record_memory_history("all", "all", "python", 100);
  void* block = nullptr;
  std::thread thread([&] {
    FreedAtThreadExit& holder = freed_at_thread_exit;
    block = holder.block = cuda::caching_allocator_alloc(4096, 0);
    cuda::nvtx::range_push("left open at exit");
  });
  thread.join();
  const auto snap = cuda::memory::memory_snapshot();
  const auto* alloc = find_entry(snap, "alloc", block);
  const auto* freed = find_entry(snap, "free_requested", block);
  ASSERT_NE(alloc, nullptr);
  ASSERT_NE(freed, nullptr);
  EXPECT_EQ(alloc->user_metadata, "");
  EXPECT_EQ(freed->user_metadata, "");
}

// Without C++ stacks ("python"), each action keeps the ranges open where it happened; a free
// outside any range keeps those of the allocation it frees.
TEST_F(AllocatorHistoryTest, WithoutStacksEachActionKeepsTheRangesOpenAtIt) {
  cuda::memory::record_memory_history("all", "all", "python", 100);
  void* bare = cuda::caching_allocator_alloc(4096, 0);
  void* ranged = nullptr;
  {
    cuda::nvtx::Range step("step");
    cuda::nvtx::Range forward("forward");
    ranged = cuda::caching_allocator_alloc(8192, 0);
  }
  {
    cuda::nvtx::Range backward("backward");
    cuda::caching_allocator_delete(bare);
  }
  cuda::caching_allocator_delete(ranged);
  const auto snap = cuda::memory::memory_snapshot();
  const auto* bare_alloc = find_entry(snap, "alloc", bare);
  const auto* bare_free = find_entry(snap, "free_completed", bare);
  const auto* ranged_alloc = find_entry(snap, "alloc", ranged);
  const auto* ranged_free = find_entry(snap, "free_completed", ranged);
  ASSERT_TRUE(bare_alloc && bare_free && ranged_alloc && ranged_free);
  EXPECT_EQ(bare_alloc->user_metadata, "");
  EXPECT_EQ(bare_free->user_metadata, "backward");
  EXPECT_EQ(ranged_alloc->user_metadata, "step;forward");
  EXPECT_EQ(ranged_free->user_metadata, "step;forward");
  for (const auto* e : {bare_alloc, bare_free, ranged_alloc, ranged_free}) EXPECT_TRUE(e->frames.empty());
}

// Threads allocating at once without C++ stacks: each action keeps its own thread's ranges
// (the NVTX part of a capture reads the calling thread's stack and its per-thread state).
TEST_F(AllocatorHistoryTest, WithoutStacksEachThreadsActionsKeepItsOwnRanges) {
  { cuda::nvtx::Range setup("setup"); }  // NVTX's own first-call setup, before the threads
  cuda::memory::record_memory_history("all", "all", "python", 1000);
  constexpr int kThreads = 3;
  std::vector<void*> blocks[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &blocks] {
      cuda::nvtx::Range outer("thread " + std::to_string(t));
      for (int i = 0; i < 50; ++i) {
        cuda::nvtx::Range inner(i % 2 == 0 ? "even" : "odd");
        blocks[t].push_back(cuda::caching_allocator_alloc(4096 + 512 * static_cast<std::size_t>(t), 0));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto snap = cuda::memory::memory_snapshot();
  int seen = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < blocks[t].size(); ++i) {
      const auto* entry = find_entry(snap, "alloc", blocks[t][i]);
      ASSERT_NE(entry, nullptr);
      EXPECT_EQ(entry->user_metadata, "thread " + std::to_string(t) + (i % 2 == 0 ? ";even" : ";odd"));
      ++seen;
    }
  }
  EXPECT_EQ(seen, kThreads * 50);
  for (auto& list : blocks) {
    for (void* p : list) cuda::caching_allocator_delete(p);
  }
}

// Context "alloc": frees capture nothing and keep the context of their allocation, stacks
// included, whatever ranges are open at the free.
TEST_F(AllocatorHistoryTest, ContextsOfAllocationsOnlyLeaveFreesWithTheirAllocations) {
  cuda::memory::record_memory_history("all", "alloc", "all", 100);
  void* block = nullptr;
  {
    cuda::nvtx::Range forward("forward");
    block = cuda::caching_allocator_alloc(4096, 0);
  }
  {
    cuda::nvtx::Range backward("backward");
    cuda::caching_allocator_delete(block);
  }
  const auto snap = cuda::memory::memory_snapshot();
  const auto* alloc = find_entry(snap, "alloc", block);
  const auto* freed = find_entry(snap, "free_completed", block);
  ASSERT_TRUE(alloc && freed);
  EXPECT_EQ(alloc->user_metadata, "forward");
  EXPECT_EQ(freed->user_metadata, "forward");
  EXPECT_FALSE(alloc->frames.empty());
  ASSERT_EQ(freed->frames.size(), alloc->frames.size());
  for (std::size_t i = 0; i < alloc->frames.size(); ++i) EXPECT_EQ(freed->frames[i].name, alloc->frames[i].name);
}

// For its scope, the process may map only `headroom` bytes more than it has mapped now
// (RLIMIT_AS): a large allocation fails, as when host memory runs out.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(std::size_t headroom) {
    getrlimit(RLIMIT_AS, &saved_);
    std::size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlimit limited = saved_;
    limited.rlim_cur = pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) + headroom;
    applied_ = setrlimit(RLIMIT_AS, &limited) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool applied() const { return applied_; }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_{};
  bool applied_ = false;
};

}  // namespace

// The sanitizers' allocators end the process when memory runs out unless told to return
// null, as the system's does; the tests below need that answer.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {
constexpr std::size_t kHeadroom = 8 << 20;  // well under the first reservation's size

using cuda::detail::alloc::Action;
using cuda::detail::alloc::TraceBuffer;
using cuda::detail::alloc::TraceRecord;

TraceRecord record_at(std::uintptr_t addr) { return TraceRecord{Action::kAlloc, addr, 1, 0, 0, {}}; }

std::vector<std::uintptr_t> addresses(const TraceBuffer& buffer) {
  std::vector<std::uintptr_t> out;
  buffer.for_each([&](const TraceRecord& r) { out.push_back(r.addr); });
  return out;
}

TEST(TraceBufferTest, ARecordWithNoStorageToGoToIsDroppedAndCounted) {
  TraceBuffer buffer;
  buffer.set_max_entries(TraceBuffer::kReserved);
  {
    AddressSpaceLimit limit(kHeadroom);
    ASSERT_TRUE(limit.applied());
    buffer.insert(record_at(1));
  }
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(buffer.dropped(), 1u);
  buffer.insert(record_at(2));  // memory again: the storage is reserved now
  EXPECT_EQ(addresses(buffer), std::vector<std::uintptr_t>{2});
}

TEST(TraceBufferTest, ABufferThatCannotGrowOverwritesItsOldestRecord) {
  TraceBuffer buffer;
  buffer.set_max_entries(4 * TraceBuffer::kReserved);  // grows past its first reservation
  for (std::uintptr_t i = 0; i < TraceBuffer::kReserved; ++i) buffer.insert(record_at(i));
  {
    AddressSpaceLimit limit(kHeadroom);
    ASSERT_TRUE(limit.applied());
    buffer.insert(record_at(TraceBuffer::kReserved));
  }
  const std::vector<std::uintptr_t> kept = addresses(buffer);
  ASSERT_EQ(kept.size(), TraceBuffer::kReserved);
  EXPECT_EQ(kept.front(), 1u);
  EXPECT_EQ(kept.back(), TraceBuffer::kReserved);
  EXPECT_EQ(buffer.dropped(), 0u);
}

// mmap without a hint places a mapping just below the lowest one, where the CUDA driver grows
// its reservation of address space for device memory; a ring there moved a replay's segments.
TEST(TraceBufferTest, TheRingIsMappedFarFromWhereMappingsWithoutAHintGo) {
  TraceBuffer buffer;
  buffer.set_max_entries(TraceBuffer::kReserved);
  const auto ring = reinterpret_cast<std::uintptr_t>(&buffer.slot());
  constexpr std::size_t kBytes = 1 << 20;
  void* unhinted = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unhinted, MAP_FAILED);
  const auto other = reinterpret_cast<std::uintptr_t>(unhinted);
  munmap(unhinted, kBytes);
  const std::uintptr_t distance = ring > other ? ring - other : other - ring;
  EXPECT_GT(distance, std::uintptr_t{1} << 39) << std::hex << "ring at 0x" << ring << ", unhinted mapping at 0x" << other;
}

TEST(TraceBufferTest, AFullRingOverwritesItsOldestAndListsOldestFirst) {
  TraceBuffer buffer;
  buffer.set_max_entries(4);
  for (std::uintptr_t i = 1; i <= 10; ++i) buffer.insert(record_at(i));
  EXPECT_EQ(buffer.size(), 4u);
  EXPECT_EQ(addresses(buffer), (std::vector<std::uintptr_t>{7, 8, 9, 10}));
}

TEST(TraceBufferTest, ShrinkingAWrappedRingKeepsItsNewestRecordsInOrder) {
  TraceBuffer buffer;
  buffer.set_max_entries(5);
  for (std::uintptr_t i = 1; i <= 8; ++i) buffer.insert(record_at(i));  // wrapped: 4..8
  buffer.set_max_entries(3);
  EXPECT_EQ(addresses(buffer), (std::vector<std::uintptr_t>{6, 7, 8}));
  buffer.insert(record_at(9));
  EXPECT_EQ(addresses(buffer), (std::vector<std::uintptr_t>{7, 8, 9}));
}

TEST(TraceBufferTest, GrowingAWrappedRingFillsItBeforeOverwritingAgain) {
  TraceBuffer buffer;
  buffer.set_max_entries(3);
  for (std::uintptr_t i = 1; i <= 5; ++i) buffer.insert(record_at(i));  // wrapped: 3..5
  buffer.set_max_entries(5);
  for (std::uintptr_t i = 6; i <= 7; ++i) buffer.insert(record_at(i));
  EXPECT_EQ(addresses(buffer), (std::vector<std::uintptr_t>{3, 4, 5, 6, 7}));
  buffer.insert(record_at(8));
  EXPECT_EQ(addresses(buffer), (std::vector<std::uintptr_t>{4, 5, 6, 7, 8}));
}

TEST(TraceBufferTest, AReleasedBufferStartsEmpty) {
  TraceBuffer buffer;
  buffer.set_max_entries(2);
  for (std::uintptr_t i = 1; i <= 3; ++i) buffer.insert(record_at(i));
  buffer.release();
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_TRUE(addresses(buffer).empty());
  buffer.insert(record_at(4));
  EXPECT_EQ(addresses(buffer), std::vector<std::uintptr_t>{4});
}

// The action shares a word with the NVTX id: both come back whole at their largest values.
TEST(TraceRecordTest, ActionAndContextComeBackWholeAtTheirLargestValues) {
  const auto largest_nvtx = static_cast<std::uint32_t>(cuda::detail::alloc::kMaxNvtxStacks);
  const TraceRecord r(Action::kFree, 0x7f00'0000'1000, ~std::size_t{0}, -1, ~std::uint64_t{0},
                      {0xffff'ffffu, largest_nvtx});
  EXPECT_EQ(r.action(), Action::kFree);
  EXPECT_EQ(r.context().stack, 0xffff'ffffu);
  EXPECT_EQ(r.context().nvtx, largest_nvtx);
  EXPECT_EQ(r.size, ~std::size_t{0});
  EXPECT_EQ(r.stream, -1);
  EXPECT_EQ(r.ticks, ~std::uint64_t{0});
  const TraceRecord first(Action::kAlloc, 0, 0, 0, 0, {});
  EXPECT_EQ(first.action(), Action::kAlloc);
  EXPECT_FALSE(first.context());
}

// Ranges named by a step number make every NVTX stack new. The table keeps a bounded number;
// a stack kept before it filled keeps its ranges after. In a child process, since the table
// stays full for the life of the process. Prints the ranges of an allocation under a stack
// new once the table is full, those of one under a stack kept before, and whether the
// refusal was counted, a line each.
void* alloc_in(const std::string& range) {
  cuda::nvtx::Range scope(range);
  return cuda::caching_allocator_alloc(512, 0);
}

int fill_nvtx_table(int, char**) {
  cuda::memory::record_memory_history("all", "all", "python", 100);
  cuda::caching_allocator_delete(alloc_in("known"));
  const std::uint64_t refused_before = cuda::detail::alloc::nvtx_stacks_refused();
  for (std::size_t step = 0; step < cuda::detail::alloc::kMaxNvtxStacks; ++step) {
    cuda::caching_allocator_delete(alloc_in("step " + std::to_string(step)));
  }
  void* unkept = alloc_in("one step too many");
  void* known = alloc_in("known");
  const auto snap = cuda::memory::memory_snapshot();
  const auto* unkept_entry = find_entry(snap, "alloc", unkept);
  const auto* known_entry = find_entry(snap, "alloc", known);
  if (unkept_entry == nullptr || known_entry == nullptr) return 3;
  std::printf("%s\n%s\n%d\n", unkept_entry->user_metadata.c_str(), known_entry->user_metadata.c_str(),
              cuda::detail::alloc::nvtx_stacks_refused() > refused_before ? 1 : 0);
  cuda::caching_allocator_delete(unkept);
  cuda::caching_allocator_delete(known);
  return 0;
}
const ChildModeRegistrar fill_nvtx_table_mode("--fill-nvtx-table", fill_nvtx_table);

TEST(AllocatorHistoryNvtxTableTest, StacksBeyondTheTablesBoundAreRecordedWithoutRanges) {
  const ChildResult child = run_self({"--fill-nvtx-table"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_EQ(child.output, "\nknown\n1\n");
}

// Fabricated frame chains on a page followed by an inaccessible one: the walk must end at
// every kind of broken link without reading past its upper bound (the guard page would fault).
class FrameWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* mem = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    base_ = static_cast<char*>(mem);
    ASSERT_EQ(mprotect(base_ + page_, page_, PROT_NONE), 0);
  }
  void TearDown() override { munmap(base_, 2 * page_); }
  // The address of word `i` of the last 64 words below the guard page.
  std::uintptr_t at(std::size_t i) const { return reinterpret_cast<std::uintptr_t>(base_ + page_) - 64 * 8 + 8 * i; }
  // A frame record at word `i`: the next record's address, then a return address.
  void frame(std::size_t i, std::uintptr_t next, std::uintptr_t return_address) {
    auto* w = reinterpret_cast<std::uintptr_t*>(at(i));
    w[0] = next;
    w[1] = return_address;
  }
  void frame(std::size_t i, std::uintptr_t next) { frame(i, next, 0x1000 + i); }
  // The walk's depth; its return addresses in out_.
  int walk(std::size_t first, int max_depth = 64) {
    out_.assign(64, nullptr);
    const int depth = cuda::detail::alloc::walk_frame_chain(at(first), at(0), at(64), out_.data(), max_depth);
    out_.resize(static_cast<std::size_t>(depth));
    return depth;
  }
  std::vector<void*> returns(std::initializer_list<std::size_t> frames) const {
    std::vector<void*> r;
    for (std::size_t i : frames) r.push_back(reinterpret_cast<void*>(0x1000 + i));
    return r;
  }
  std::vector<cuda::detail::alloc::ProvenFrame> prove(std::uintptr_t fp, int max_depth = 64) {
    std::vector<cuda::detail::alloc::ProvenFrame> proof(64);
    proof.resize(static_cast<std::size_t>(
        cuda::detail::alloc::prove_frame_chain(fp, at(0), at(64), proof.data(), max_depth)));
    return proof;
  }
  bool proven(std::uintptr_t fp, const std::vector<cuda::detail::alloc::ProvenFrame>& proof, int max_depth = 64) {
    return cuda::detail::alloc::frame_chain_proven(fp, at(64), proof, max_depth);
  }
  // The frames of the stack a capture starting at `fp` keeps, as the calling thread's walk
  // cache finds it.
  std::vector<void*> cached_stack(std::uintptr_t fp) const {
    const auto frames =
        cuda::detail::alloc::stack_frames(cuda::detail::alloc::frame_chain_stack_id(fp, at(0), at(64)));
    return {frames.begin(), frames.end()};
  }
  std::uint32_t cached_stack_id(std::uintptr_t fp) const {
    return cuda::detail::alloc::frame_chain_stack_id(fp, at(0), at(64));
  }

  std::size_t page_ = 0;
  char* base_ = nullptr;
  std::vector<void*> out_;
};

TEST_F(FrameWalkTest, FollowsTheChainToTheOutermostFrame) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, at(20));
  frame(20, 0);  // the outermost frame's saved pointer
  EXPECT_EQ(walk(0), 4);
  EXPECT_EQ(out_, returns({0, 4, 10, 20}));
}

TEST_F(FrameWalkTest, EndsAtALinkThatDoesNotGoUp) {
  frame(0, at(6));
  frame(6, at(2));
  frame(2, at(30));
  walk(0);
  EXPECT_EQ(out_, returns({0, 6}));
  frame(6, at(6));  // a loop
  walk(0);
  EXPECT_EQ(out_, returns({0, 6}));
}

TEST_F(FrameWalkTest, EndsAtAMisalignedLink) {
  frame(0, at(4));
  frame(4, at(8) + 3);
  walk(0);
  EXPECT_EQ(out_, returns({0, 4}));
}

TEST_F(FrameWalkTest, NeverReadsARecordCrossingTheTopOrBeyondIt) {
  frame(0, at(63));  // its record would end 8 bytes into the guard page
  walk(0);
  EXPECT_EQ(out_, returns({0}));
  frame(0, at(62));  // the last whole record below the top
  frame(62, at(64) + 4096);
  walk(0);
  EXPECT_EQ(out_, returns({0, 62}));
}

TEST_F(FrameWalkTest, DoesNotStartOutsideItsBounds) {
  frame(0, at(4));
  out_.assign(4, nullptr);
  EXPECT_EQ(cuda::detail::alloc::walk_frame_chain(at(0), at(2), at(64), out_.data(), 4), 0);
  EXPECT_EQ(cuda::detail::alloc::walk_frame_chain(at(63), at(0), at(64), out_.data(), 4), 0);
}

TEST_F(FrameWalkTest, KeepsAtMostTheMaximumOfFrames) {
  for (std::size_t i = 0; i < 60; i += 2) frame(i, at(i + 2));
  frame(60, 0);
  EXPECT_EQ(walk(0, 10), 10);
  EXPECT_EQ(out_, returns({0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(walk(0, 7), 7);
  EXPECT_EQ(walk(0), 31);
}

// A walk's proof (prove_frame_chain) holds where walking again would read the same words and
// end the same way, and only there; a capture's cache answers with the walked stack whenever
// it does not.
TEST_F(FrameWalkTest, AProofHoldsForTheChainItWasMadeFrom) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, at(20));
  frame(20, 0);
  const auto proof = prove(at(0));
  ASSERT_EQ(proof.size(), 4u);
  EXPECT_TRUE(proven(at(0), proof));
  const std::uint32_t id = cached_stack_id(at(0));
  ASSERT_NE(id, 0u);
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 10, 20}));
  EXPECT_EQ(cached_stack_id(at(0)), id);
}

TEST_F(FrameWalkTest, AChangedReturnAddressBreaksTheProofAndTheWalkIsTaken) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, 0);
  const auto proof = prove(at(0));
  const std::uint32_t before = cached_stack_id(at(0));
  frame(10, 0, 0x2000);  // the outermost frame returns elsewhere now
  EXPECT_FALSE(proven(at(0), proof));
  EXPECT_NE(cached_stack_id(at(0)), before);
  EXPECT_EQ(cached_stack(at(0)), (std::vector<void*>{reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x1004),
                                                     reinterpret_cast<void*>(0x2000)}));
  frame(10, 0);
  EXPECT_TRUE(proven(at(0), proof));
  EXPECT_EQ(cached_stack_id(at(0)), before);
}

TEST_F(FrameWalkTest, AChangedSavedFramePointerBreaksTheProofAndTheWalkIsTaken) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, at(20));
  frame(20, 0);
  const auto proof = prove(at(0));
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 10, 20}));
  frame(4, at(20));  // now skips the record at 10
  EXPECT_FALSE(proven(at(0), proof));
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 20}));
  // The same return addresses at other distances: not the proof's walk, but the same stack.
  frame(4, at(12));
  frame(12, at(20), 0x1000 + 10);
  EXPECT_FALSE(proven(at(0), proof));
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 10, 20}));
}

TEST_F(FrameWalkTest, AChainThatNowGoesOnBreaksTheProofOfItsEnd) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, at(2));  // leads down: the walk ends here
  const auto proof = prove(at(0));
  ASSERT_EQ(proof.size(), 3u);
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 10}));
  frame(10, at(1));  // another pointer that leads nowhere: the walk would still end here
  EXPECT_TRUE(proven(at(0), proof));
  frame(10, at(20));  // now chained
  frame(20, 0);
  EXPECT_FALSE(proven(at(0), proof));
  EXPECT_EQ(cached_stack(at(0)), returns({0, 4, 10, 20}));
}

TEST_F(FrameWalkTest, AProofHoldsForTheSameChainAtAnotherAddress) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, 0);
  const auto proof = prove(at(0));
  frame(30, at(34), 0x1000);  // the same records, 30 words higher
  frame(34, at(40), 0x1004);
  frame(40, 0, 0x100a);
  EXPECT_TRUE(proven(at(30), proof));
  EXPECT_EQ(cached_stack_id(at(30)), cached_stack_id(at(0)));
  // The same records 4 bytes off alignment: no frame record starts there, so a walk from there
  // reads nothing and the proof must not hold.
  const std::uintptr_t off = at(50) + 4;
  const std::uintptr_t words[] = {off + 32, 0x1000, 0, 0, off + 80, 0x1004, 0, 0, 0, 0, 0, 0x100a};
  std::memcpy(reinterpret_cast<void*>(off), words, sizeof words);
  out_.assign(64, nullptr);
  EXPECT_EQ(cuda::detail::alloc::walk_frame_chain(off, at(0), at(64), out_.data(), 64), 0);
  EXPECT_FALSE(proven(off, proof));
  EXPECT_EQ(cuda::detail::alloc::frame_chain_stack_id(off, at(0), at(64)), 0u);
}

TEST_F(FrameWalkTest, AProofReachingPastTheTopIsNotRead) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, at(20));
  frame(20, 0);
  const auto proof = prove(at(0));  // its last record is 20 words above its first
  // From word 50 the last record would lie in the guard page, from 44 start at the top: reading
  // either would fault.
  EXPECT_FALSE(proven(at(50), proof));
  EXPECT_FALSE(proven(at(44), proof));
  EXPECT_FALSE(proven(at(63), proof));  // the first record itself would cross the top
  // The highest place the proof fits: its last record ends at the top, and it holds there.
  frame(42, at(46), 0x1000);
  frame(46, at(52), 0x1004);
  frame(52, at(62), 0x100a);
  frame(62, 0, 0x1014);
  EXPECT_TRUE(proven(at(42), proof));
  EXPECT_EQ(cached_stack_id(at(42)), cached_stack_id(at(0)));
}

TEST_F(FrameWalkTest, AProofOfOneRecordChecksItsReturnAddressAndItsEnd) {
  frame(0, 0);
  const auto proof = prove(at(0));
  ASSERT_EQ(proof.size(), 1u);
  EXPECT_TRUE(proven(at(0), proof));
  frame(0, 0, 0x2000);
  EXPECT_FALSE(proven(at(0), proof));
  frame(0, at(4));  // the old return address, but the chain goes on now
  frame(4, 0);
  EXPECT_FALSE(proven(at(0), proof));
}

TEST_F(FrameWalkTest, RecordsAtOddWordsAreCheckedWithUnalignedLoads) {
  // at(1) is 8 bytes past a 16-byte boundary: records there are aligned as frame records
  // are, not as a 16-byte vector.
  ASSERT_EQ(at(1) % 16, 8u);
  frame(1, at(5));
  frame(5, at(11));
  frame(11, 0);
  const auto proof = prove(at(1));
  ASSERT_EQ(proof.size(), 3u);
  EXPECT_TRUE(proven(at(1), proof));
  const std::uint32_t id = cached_stack_id(at(1));
  EXPECT_EQ(cached_stack_id(at(1)), id);
  EXPECT_EQ(cached_stack(at(1)), returns({1, 5, 11}));
}

TEST_F(FrameWalkTest, ARepeatedCaptureIsAnsweredByItsProofWithoutWalking) {
  // Return addresses no run of any test used before: the thread's cache outlives a test, and
  // the page the fixture maps may come back at the same address, where an earlier chain holds.
  static std::uintptr_t unused_addresses = 0x70000;
  const std::uintptr_t site = unused_addresses += 0x100;
  frame(0, at(4), site);
  frame(4, at(10), site + 4);
  frame(10, 0, site + 10);
  const std::uint64_t before = cuda::detail::alloc::frame_chain_walks();
  const std::uint32_t id = cached_stack_id(at(0));
  ASSERT_NE(id, 0u);
  EXPECT_EQ(cuda::detail::alloc::frame_chain_walks(), before + 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cached_stack_id(at(0)), id);
  EXPECT_EQ(cuda::detail::alloc::frame_chain_walks(), before + 1);
  frame(4, at(10), site + 0x80);  // a changed frame: walked again
  EXPECT_NE(cached_stack_id(at(0)), id);
  EXPECT_EQ(cuda::detail::alloc::frame_chain_walks(), before + 2);
}

TEST_F(FrameWalkTest, AProofNotShapedAsAWalksIsNotRead) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, 0);
  auto proof = prove(at(0));
  ASSERT_EQ(proof.size(), 3u);
  auto falling = proof;
  std::swap(falling[0].next_offset, falling[1].next_offset);  // the second record below the first
  EXPECT_FALSE(proven(at(0), falling));
  auto open_ended = proof;
  open_ended.back().next_offset = 8 * 60;  // a last record that leads on
  EXPECT_FALSE(proven(at(0), open_ended));
  EXPECT_TRUE(proven(at(0), proof));
}

TEST_F(FrameWalkTest, AProofThatRanOutOfDepthHoldsWhateverLiesBeyond) {
  frame(0, at(4));
  frame(4, at(10));
  frame(10, 0);
  const auto proof = prove(at(0), 2);
  ASSERT_EQ(proof.size(), 2u);
  frame(10, at(2), 0x2000);  // never read by a walk of depth 2
  EXPECT_TRUE(proven(at(0), proof, 2));
  const auto full = prove(at(0));
  ASSERT_EQ(full.size(), 3u);
  EXPECT_FALSE(proven(at(0), full, 2));  // a walk that deep stops sooner
}

// Recursion compiled with frame pointers (this file is, whatever the build's flags; see
// tests/runtime/CMakeLists.txt), so the walk goes through every level: a stack deeper than
// the limit keeps its innermost frames.
__attribute__((noinline)) void* allocate_below(int levels) {
  void* p = levels == 0 ? cuda::caching_allocator_alloc(4096, 0) : allocate_below(levels - 1);
  asm volatile("" : : "r"(p) : "memory");  // a call, not a jump: each level keeps its frame
  return p;
}

TEST_F(AllocatorHistoryTest, AStackDeeperThanTheLimitKeepsItsInnermostFrames) {
  cuda::memory::record_memory_history("all", "all", "all", 100);
  void* deep = allocate_below(100);
  const auto snap = cuda::memory::memory_snapshot();
  cuda::caching_allocator_delete(deep);
  const auto* entry = find_entry(snap, "alloc", deep);
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(entry->frames.size(), static_cast<std::size_t>(cuda::detail::alloc::kMaxCallerFrames));
  // The allocator's public entry point may or may not have a frame of its own above the
  // caller's; every frame after the first two is a level of the recursion.
  for (std::size_t i = 2; i < entry->frames.size(); ++i) {
    EXPECT_THAT(std::string(entry->frames[i].name), ::testing::HasSubstr("allocate_below")) << "frame " << i;
  }
}

// Two call sites reach the allocator through one helper at one stack depth: the first frame
// record kept and its return address (in the helper) are the same for both, and only the
// next record tells them apart. Each helper call notes its frame's address, to show the depth
// was the same.
std::vector<std::uintptr_t> helper_frames;
__attribute__((noinline)) void* allocate_through_helper(std::size_t size) {
  helper_frames.push_back(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)));
  void* p = cuda::caching_allocator_alloc(size, 0);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
__attribute__((noinline)) void* first_call_site() {
  void* p = allocate_through_helper(4096);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
__attribute__((noinline)) void* second_call_site() {
  void* p = allocate_through_helper(4096);
  asm volatile("" : "+r"(p) : : "memory");
  return p;
}

TEST_F(AllocatorHistoryTest, TwoCallSitesAtOneDepthKeepTheirOwnStacks) {
  cuda::memory::record_memory_history("all", "all", "all", 100);
  helper_frames.clear();
  std::vector<void*> first, second;
  for (int i = 0; i < 3; ++i) {
    first.push_back(first_call_site());
    second.push_back(second_call_site());
  }
  const auto snap = cuda::memory::memory_snapshot();
  for (void* p : first) cuda::caching_allocator_delete(p);
  for (void* p : second) cuda::caching_allocator_delete(p);
  ASSERT_EQ(helper_frames.size(), 6u);
  for (std::uintptr_t f : helper_frames) ASSERT_EQ(f, helper_frames[0]) << "the call sites are not at one depth";
  auto names = [&](void* block) {
    const auto* entry = find_entry(snap, "alloc", block);
    std::vector<std::string> out;
    if (entry != nullptr) {
      for (const auto& frame : entry->frames) out.emplace_back(frame.name);
    }
    return out;
  };
  const auto first_names = names(first[0]);
  const auto second_names = names(second[0]);
  ASSERT_FALSE(first_names.empty());
  EXPECT_NE(first_names, second_names);
  auto mentions = [](const std::vector<std::string>& frames, const std::string& function) {
    return std::any_of(frames.begin(), frames.end(),
                       [&](const std::string& name) { return name.find(function) != std::string::npos; });
  };
  EXPECT_TRUE(mentions(first_names, "first_call_site"));
  EXPECT_FALSE(mentions(first_names, "second_call_site"));
  EXPECT_TRUE(mentions(second_names, "second_call_site"));
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(names(first[i]), first_names) << "allocation " << i;
    EXPECT_EQ(names(second[i]), second_names) << "allocation " << i;
  }
}

// The same with contexts captured directly, three helpers deep (the capture skips the frames
// of capture_context's caller, as it skips malloc's), so that the first frame kept returns
// into the outermost helper: each call site keeps one stack id, and the two keep two.
// kLevels helpers below the outermost, each a frame of its own (a call, not a jump).
template <int kLevels>
__attribute__((noinline)) std::uint32_t stack_id_below() {
  std::uint32_t id;
  if constexpr (kLevels == 0) {
    id = cuda::detail::alloc::capture_context(true).stack;
  } else {
    id = stack_id_below<kLevels - 1>();
  }
  asm volatile("" : : "r"(id) : "memory");
  return id;
}
__attribute__((noinline)) std::uint32_t stack_id_through_helpers() {
  helper_frames.push_back(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)));
  const std::uint32_t id = stack_id_below<1>();
  asm volatile("" : : "r"(id) : "memory");
  return id;
}
__attribute__((noinline)) std::uint32_t first_stack_id_site() {
  const std::uint32_t id = stack_id_through_helpers();
  asm volatile("" : : "r"(id) : "memory");
  return id;
}
__attribute__((noinline)) std::uint32_t second_stack_id_site() {
  std::uint32_t id = stack_id_through_helpers();
  asm volatile("" : "+r"(id) : : "memory");
  return id;
}

TEST(AllocatorHistoryStackIdTest, ACallSiteKeepsOneStackIdAndTwoAtOneDepthKeepTwo) {
  helper_frames.clear();
  std::vector<std::uint32_t> first, second;
  for (int i = 0; i < 4; ++i) {
    first.push_back(first_stack_id_site());
    second.push_back(second_stack_id_site());
  }
  ASSERT_EQ(helper_frames.size(), 8u);
  for (std::uintptr_t f : helper_frames) ASSERT_EQ(f, helper_frames[0]) << "the call sites are not at one depth";
  ASSERT_NE(first[0], 0u);
  ASSERT_NE(second[0], 0u);
  EXPECT_NE(first[0], second[0]);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(first[i], first[0]) << "call " << i;
    EXPECT_EQ(second[i], second[0]) << "call " << i;
  }
  // Both stacks begin in the outermost helper and part at the next frame.
  const auto a = cuda::detail::alloc::stack_frames(first[0]);
  const auto b = cuda::detail::alloc::stack_frames(second[0]);
  ASSERT_GE(a.size(), 2u);
  ASSERT_GE(b.size(), 2u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
}

// A fiber runs on a stack of its own (here from the heap), outside the bounds the thread's
// frame-pointer walk checks against: its allocations keep no C++ stack, where the thread's do.
ucontext_t fiber_caller, fiber;
void* allocated_on_fiber = nullptr;
void allocate_on_fiber() { allocated_on_fiber = cuda::caching_allocator_alloc(4096, 0); }

TEST_F(AllocatorHistoryTest, AnAllocationOnAFibersStackKeepsNoCppStack) {
  cuda::memory::record_memory_history("all", "all", "all", 100);
  std::vector<char> fiber_stack(256 << 10);
  ASSERT_EQ(getcontext(&fiber), 0);
  fiber.uc_stack.ss_sp = fiber_stack.data();
  fiber.uc_stack.ss_size = fiber_stack.size();
  fiber.uc_link = &fiber_caller;
  makecontext(&fiber, allocate_on_fiber, 0);
  ASSERT_EQ(swapcontext(&fiber_caller, &fiber), 0);
  void* on_thread = cuda::caching_allocator_alloc(4096, 0);
  const auto snap = cuda::memory::memory_snapshot();
  cuda::caching_allocator_delete(allocated_on_fiber);
  cuda::caching_allocator_delete(on_thread);
  ASSERT_NE(find_entry(snap, "alloc", allocated_on_fiber), nullptr);
  ASSERT_NE(find_entry(snap, "alloc", on_thread), nullptr);
  EXPECT_TRUE(find_entry(snap, "alloc", allocated_on_fiber)->frames.empty());
  EXPECT_FALSE(find_entry(snap, "alloc", on_thread)->frames.empty());
}

}  // namespace
}  // namespace cudascope::testing
