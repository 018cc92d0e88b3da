// Sizes the caching allocator cannot round (issue 25): within 2 MiB of 2^64 the rounding
// to 512 bytes, to a power-of-two division or to a 2 MiB segment would wrap past SIZE_MAX
// to a small block. They are refused with cuda::Error (kInvalidValue), as torch raises, by
// caching_allocator_alloc and by the replays (replay and whatif alike); nothing is counted.
#include "allocator_test_util.h"

#include "allocator/block_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace cudascope {
namespace {

using cuda::detail::alloc::kMaxRequestSize;

// The size the caching allocator was asked for and what it did: the error's code, or -1 when
// the request succeeded or ran out of memory.
int refusal_code(std::size_t size) {
  try {
    void* p = cuda::caching_allocator_alloc(size, 0);
    cuda::caching_allocator_delete(p);
    return -1;
  } catch (const cuda::OutOfMemoryError&) {
    return -1;
  } catch (const cuda::Error& e) {
    return e.code();
  }
}

class AllocatorSizeLimitTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::fresh_allocator(); }
  void TearDown() override { testing::fresh_allocator(); }
};

TEST_F(AllocatorSizeLimitTest, SizesThatWouldWrapWhenRoundedAreRefusedAndNotCounted) {
  const auto before = cuda::memory_stats(0);
  for (const std::size_t size : {SIZE_MAX, SIZE_MAX - 511, SIZE_MAX - (std::size_t{1} << 20), kMaxRequestSize + 1}) {
    EXPECT_EQ(refusal_code(size), cuda::error_code::kInvalidValue) << size;
  }
  const auto after = cuda::memory_stats(0);
  EXPECT_EQ(after.at("allocation.all.allocated"), before.at("allocation.all.allocated"));
  EXPECT_EQ(after.at("requested_bytes.all.allocated"), before.at("requested_bytes.all.allocated"));
  EXPECT_EQ(after.at("num_ooms"), before.at("num_ooms"));
}

TEST_F(AllocatorSizeLimitTest, RefusalMessageNamesTheSize) {
  try {
    cuda::caching_allocator_alloc(SIZE_MAX, 0);
    FAIL() << "SIZE_MAX was allocated";
  } catch (const cuda::OutOfMemoryError& e) {
    FAIL() << "refused as out of memory, which a replay counts as an OOM: " << e.what();
  } catch (const cuda::Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(SIZE_MAX) + " bytes"), std::string::npos) << e.what();
  }
}

TEST_F(AllocatorSizeLimitTest, PowerOfTwoDivisionsThatWouldWrapAreRefused) {
  // With 4 divisions a request just under 2^64 rounds up to 2^64, which wraps to 0.
  cuda::memory::set_allocator_settings("roundup_power2_divisions:4");
  const std::size_t size = kMaxRequestSize - (std::size_t{1} << 60);
  EXPECT_EQ(refusal_code(size), cuda::error_code::kInvalidValue);
}

TEST_F(AllocatorSizeLimitTest, RoundableHugeSizeIsStillAnOutOfMemoryError) {
  EXPECT_THROW(cuda::caching_allocator_alloc(std::size_t{1} << 62, 0), cuda::OutOfMemoryError);
  // The largest size that rounds: a device that cannot hold it, not a refusal.
  EXPECT_THROW(cuda::caching_allocator_alloc(kMaxRequestSize, 0), cuda::OutOfMemoryError);
}

TEST_F(AllocatorSizeLimitTest, ReplayRequestsRefuseTheSizeNamingTheRequest) {
  std::vector<cuda::memory::ReplayRequest> requests(2);
  requests[0].size = 4096;
  requests[0].id = 1;
  requests[1].size = SIZE_MAX;
  requests[1].id = 2;
  cuda::memory::ReplayRequestsOptions options;
  options.name = "seq";
  try {
    cuda::memory::replay_requests(requests, options);
    FAIL() << "a size of SIZE_MAX was replayed";
  } catch (const cuda::OutOfMemoryError& e) {
    FAIL() << e.what();
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
    EXPECT_NE(std::string(e.what()).find("seq: request 1: size " + std::to_string(SIZE_MAX)), std::string::npos)
        << e.what();
  }
  // The session cleaned up after itself: the next replay starts from a clean allocator.
  EXPECT_EQ(cuda::memory_allocated(0), 0);
}

TEST_F(AllocatorSizeLimitTest, ReplayOfANegativeSizeIsRefusedNamingTheLine) {
  std::istringstream ops("{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 1, \"size\": -1}\n");
  try {
    cuda::memory::replay(ops, "neg");
    FAIL() << "a size of -1 was replayed";
  } catch (const cuda::Error& e) {
    EXPECT_NE(std::string(e.what()).find("neg:2: \"size\" is negative"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cudascope
