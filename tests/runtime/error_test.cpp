#include "test_support.h"

namespace cuda = cudascope::cuda;

TEST(ErrorTest, CarriesCodeCallAndLocation) {
  const cuda::Error error(cuda::error_code::kInvalidValue, "cudaMemcpy(dst, src, n)", "copy.cpp", 42, "bad size");
  EXPECT_EQ(error.code(), 1);
  EXPECT_EQ(error.call(), "cudaMemcpy(dst, src, n)");
  EXPECT_STREQ(error.file(), "copy.cpp");
  EXPECT_EQ(error.line(), 42);
  EXPECT_STREQ(error.what(), "cudaErrorInvalidValue (1) in cudaMemcpy(dst, src, n) at copy.cpp:42: bad size");
}

TEST(ErrorTest, OutOfMemoryIsAnError) {
  try {
    throw cuda::OutOfMemoryError("cudaMalloc", "alloc.cpp", 7, "tried to allocate 2.00 GiB");
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kMemoryAllocation);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cudaErrorMemoryAllocation"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("tried to allocate 2.00 GiB"));
  }
}

TEST(ErrorTest, RuntimeErrorsNameTheFailingCall) {
  try {
    cuda::get_device_properties(1000);
    FAIL() << "no error";
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kInvalidDevice);
    EXPECT_FALSE(e.call().empty());
    EXPECT_GT(e.line(), 0);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("1000"));
  }
}

TEST(ErrorTest, ErrorNamesForKnownCodes) {
  EXPECT_EQ(cuda::error_name(2), "cudaErrorMemoryAllocation");
  EXPECT_EQ(cuda::error_name(101), "cudaErrorInvalidDevice");
}
