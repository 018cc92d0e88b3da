// The simulated device's memory (an internal part of the sim backend).
#include "backend/sim_memory.h"

#include <cudascope/cuda/error.h>

#include <gtest/gtest.h>

namespace cuda = cudascope::cuda;
using cuda::detail::SimMemory;

TEST(SimMemoryTest, AddressesAreDeterministicFirstFit) {
  SimMemory memory(5, 64 << 20);
  void* a = memory.allocate(1 << 20);
  void* b = memory.allocate(1000);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(a), 1 << 20);
  memory.release(a);
  void* c = memory.allocate(512);
  EXPECT_EQ(c, a) << "first fit reuses the lowest free range";
  EXPECT_EQ(memory.used(), 512u + 1024u);
}

TEST(SimMemoryTest, RefusesBeyondCapacityAndCoalesces) {
  SimMemory memory(6, 4 << 20);
  void* a = memory.allocate(2 << 20);
  void* b = memory.allocate(2 << 20);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(memory.allocate(512), nullptr);
  memory.release(a);
  memory.release(b);
  EXPECT_EQ(memory.used(), 0u);
  EXPECT_NE(memory.allocate(4 << 20), nullptr) << "freed neighbours merge into one range";
}

TEST(SimMemoryTest, ForeignPointerIsAnError) {
  SimMemory memory(7, 4 << 20);
  int local = 0;
  EXPECT_THROW(memory.release(&local), cuda::Error);
}

TEST(SimMemoryTest, VirtualMemoryChargesOnlyMappedBytes) {
  SimMemory memory(8, 8 << 20);
  char* base = static_cast<char*>(memory.reserve(16 << 20));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(memory.used(), 0u);
  ASSERT_TRUE(memory.map(base, 4 << 20));
  base[0] = 1;
  base[(4 << 20) - 1] = 2;
  EXPECT_EQ(memory.used(), 4u << 20);
  EXPECT_TRUE(memory.map(base + (4 << 20), 4 << 20));
  EXPECT_FALSE(memory.map(base + (8 << 20), 2 << 20)) << "capacity is 8 MiB";
  memory.unmap(base, 8 << 20);
  EXPECT_EQ(memory.used(), 0u);
  memory.unreserve(base, 16 << 20);
}

TEST(SimMemoryTest, ParsesByteSizes) {
  EXPECT_EQ(cuda::detail::parse_byte_size("16GiB", "X"), 16ULL << 30);
  EXPECT_EQ(cuda::detail::parse_byte_size("512m", "X"), 512ULL << 20);
  EXPECT_EQ(cuda::detail::parse_byte_size("4096", "X"), 4096u);
  try {
    cuda::detail::parse_byte_size("lots", "CUDASCOPE_SIM_MEMORY");
    FAIL();
  } catch (const cuda::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDASCOPE_SIM_MEMORY='lots'"), std::string::npos) << e.what();
  }
}

// The driver's address policy (sim_address_space.h), rule by rule, on the patterns seen in
// the recordings (tests/data/replay_*.segments.json.gz).
namespace {

using cuda::detail::SimAddressSpace;
constexpr std::uintptr_t kMiB = 1 << 20;
constexpr std::uintptr_t kTop = 0x100000000000ULL + (std::uintptr_t{64} << 30);

SimAddressSpace make_space() { return SimAddressSpace(0x100000000000ULL, std::size_t{64} << 30); }
std::uintptr_t take(SimAddressSpace& space, std::size_t mib) { return space.allocate(mib * kMiB).address; }

}  // namespace

TEST(SimAddressSpaceTest, ChunksGoTopDownAndFillUpwards) {
  SimAddressSpace space = make_space();
  // The first chunk is the highest 32 MiB; its lowest 6 MiB are the driver's.
  EXPECT_EQ(take(space, 20), kTop - 32 * kMiB + 6 * kMiB);
  EXPECT_EQ(take(space, 2), kTop - 32 * kMiB + 26 * kMiB) << "the chunk fills upwards";
  // 146 MiB: a chunk of 160 MiB (whole 32 MiB units) right below; its 14 MiB tail takes the
  // next small segment, before the 2 MiB left in the first chunk (newest chunk first).
  const std::uintptr_t big = take(space, 146);
  EXPECT_EQ(big, kTop - 192 * kMiB);
  EXPECT_EQ(take(space, 2), big + 146 * kMiB);
  EXPECT_EQ(take(space, 12), big + 148 * kMiB) << "the newest chunk's tail, best fit";
  EXPECT_EQ(take(space, 4), kTop - 32 * kMiB + 28 * kMiB) << "only the first chunk still has 4 MiB";
}

TEST(SimAddressSpaceTest, AFreeRangeOfExactlyTheChunksSizeIsPassedOver) {
  SimAddressSpace space = make_space();
  take(space, 26);                           // fills the first chunk
  const std::uintptr_t a = take(space, 32);  // chunk [top-64, top-32)
  const std::uintptr_t b = take(space, 32);  // chunk [top-96, top-64)
  EXPECT_EQ(a, kTop - 64 * kMiB);
  EXPECT_EQ(b, kTop - 96 * kMiB);
  const auto freed = space.release(a);
  ASSERT_TRUE(freed.has_value()) << "the emptied chunk goes back";
  EXPECT_EQ(freed->first, a);
  // A 32 MiB chunk is asked as 64 MiB less a page: the 32 MiB hole cannot hold it.
  EXPECT_EQ(take(space, 32), kTop - 128 * kMiB);
  // A chunk given back next to the space below the lowest merges with it.
  space.release(kTop - 128 * kMiB);
  EXPECT_EQ(take(space, 30), kTop - 128 * kMiB);
}

TEST(SimAddressSpaceTest, TheHighestRangeThatHoldsTheAskTakesTheChunkAtItsTop) {
  SimAddressSpace space = make_space();
  take(space, 26);
  const std::uintptr_t high = take(space, 96);   // [top-128, top-32)
  take(space, 32);                               // [top-160, top-128): keeps the holes apart
  const std::uintptr_t low = take(space, 128);   // [top-288, top-160)
  take(space, 32);                               // [top-320, top-288)
  space.release(high);
  space.release(low);
  // 40 MiB: a 64 MiB chunk asked as 96 MiB less a page; both holes hold that: the higher one
  // wins, and the chunk sits at its top.
  EXPECT_EQ(take(space, 40), kTop - 32 * kMiB - 64 * kMiB);
}

TEST(SimAddressSpaceTest, BestFitWithinAChunkNewestChunkFirst) {
  SimAddressSpace space = make_space();
  take(space, 26);
  const std::uintptr_t chunk = take(space, 100);  // a 128 MiB chunk
  const std::uintptr_t second = take(space, 14);
  const std::uintptr_t third = take(space, 14);
  EXPECT_EQ(second, chunk + 100 * kMiB);
  space.release(chunk);   // an 100 MiB hole at the chunk's start...
  space.release(second);  // ...merges with this one: 114 MiB
  take(space, 90);        // leaves 24 MiB after it
  // Holes now: 24 MiB at chunk+90 and 0 at the end (third ends at chunk+128): best fit.
  EXPECT_EQ(take(space, 20), chunk + 90 * kMiB);
  (void)third;
}

TEST(SimAddressSpaceTest, ReservationsShareTheSpaceTopDown) {
  SimAddressSpace space = make_space();
  take(space, 26);
  const std::uintptr_t reserved = space.reserve(100 * kMiB, 2 * kMiB);
  EXPECT_EQ(reserved, kTop - 32 * kMiB - 100 * kMiB);
  // cudaMalloc's chunk goes below it, on a 32 MiB boundary: asked as 64 MiB less a page,
  // placed at the top of the range below the reservation, trimmed to the boundary.
  EXPECT_EQ(take(space, 20), kTop - 192 * kMiB);
  std::size_t bytes = 0;
  EXPECT_TRUE(space.unreserve(reserved, &bytes));
  EXPECT_EQ(bytes, 100 * kMiB);
  EXPECT_FALSE(space.unreserve(reserved));
}

TEST(SimAddressSpaceTest, SmallRequestsSharePages) {
  SimAddressSpace space = make_space();
  const std::uintptr_t a = space.allocate(1000).address;
  const std::uintptr_t b = space.allocate(512).address;
  EXPECT_EQ(b, a + 1024);
  EXPECT_EQ(a % (2 * kMiB), 0u);
  bool known = false;
  EXPECT_FALSE(space.release(a, &known).has_value());
  EXPECT_TRUE(known);
  space.release(b);
  space.release(0x1234, &known);
  EXPECT_FALSE(known);
  EXPECT_EQ(take(space, 2), a) << "the emptied page went back to its chunk";
}
