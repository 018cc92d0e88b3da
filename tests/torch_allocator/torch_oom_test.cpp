// Bound to a libc10 (here a stand-in with c10's symbols), the alloc hook raises
// c10::OutOfMemoryError, the type PyTorch turns into torch.OutOfMemoryError; the other hooks
// raise std::exceptions, and free still never throws. A process of its own: binding switches
// the whole process to throwing.
#include "fake_c10.h"
#include "torch_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

namespace {

using ::testing::HasSubstr;

std::string fake_c10_path() {
  Dl_info info{};
  dladdr(reinterpret_cast<void*>(&c10::throw_out_of_memory_for_test), &info);
  return info.dli_fname == nullptr ? "" : info.dli_fname;
}

TEST(TorchOutOfMemoryTest, AnOutOfMemoryRaisesC10OutOfMemoryErrorOnceBound) {
  ASSERT_EQ(cudascope_torch_bind_torch(fake_c10_path().c_str()), 1) << cudascope_torch_last_error();
  const auto snapshot = std::filesystem::temp_directory_path() / ("torch_oom_bound." + std::to_string(getpid()) + ".json");
  setenv("CUDASCOPE_OOM_SNAPSHOT", snapshot.c_str(), 1);
  try {
    cudascope_torch_alloc(ssize_t{1} << 50, 0, nullptr);
    FAIL() << "no exception";
  } catch (const c10::OutOfMemoryError& e) {
    EXPECT_THAT(e.msg(), ::testing::StartsWith("CUDA out of memory. Tried to allocate"));
    EXPECT_THAT(e.what(), HasSubstr("Tried to allocate"));
    EXPECT_STREQ(e.function(), "cudascope_torch_alloc");
  }
  unsetenv("CUDASCOPE_OOM_SNAPSHOT");
  EXPECT_TRUE(std::filesystem::exists(snapshot)) << "the snapshot is written before the exception";
  std::filesystem::remove(snapshot);
  // Memory is still served after the failure.
  void* p = cudascope_torch_alloc(1000, 0, nullptr);
  EXPECT_NE(p, nullptr);
  cudascope_torch_free(p, 1000, 0, nullptr);
}

TEST(TorchOutOfMemoryTest, OtherFailuresRaiseRuntimeErrorsButFreeNeverThrows) {
  ASSERT_EQ(cudascope_torch_bind_torch(fake_c10_path().c_str()), 1);
  EXPECT_THROW(cudascope_torch_set_memory_fraction(2.0, 0), std::runtime_error);
  int local = 0;
  EXPECT_THROW(cudascope_torch_record_stream(&local, nullptr), std::runtime_error);
  EXPECT_NO_THROW(cudascope_torch_free(&local, 4, 0, nullptr));
}

TEST(TorchOutOfMemoryTest, ALibraryWithoutC10SymbolsIsNotBound) {
  EXPECT_EQ(cudascope_torch_bind_torch("libc.so.6"), 0);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("lacks typeinfo for c10::OutOfMemoryError"));
}

}  // namespace
