// The allocator's history where a program makes capturing hard: frees after a thread's
// NVTX stack is destroyed, host memory running out, NVTX stacks without end, stacks that
// are not the thread's own.
#include "allocator_test_util.h"

#include <string>
#include <thread>

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

}  // namespace
}  // namespace cudascope::testing
