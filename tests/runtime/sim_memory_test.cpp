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
