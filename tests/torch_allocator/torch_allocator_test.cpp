// libcudascope_torch_allocator.so's entry points on the sim backend, called as PyTorch calls
// them (the hooks) and as the Python module calls them (the figures).
#include "torch_allocator.h"

#include "nvtx_message.h"
#include "test_support.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/kernels.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/cuda/nvtx.h>
#include <cudascope/cuda/stream.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

using ::testing::HasSubstr;
namespace cuda = cudascope::cuda;
constexpr ssize_t kMiB = 1 << 20;

std::string take(char* text) {
  EXPECT_NE(text, nullptr) << cudascope_torch_last_error();
  std::string out = text == nullptr ? "" : text;
  cudascope_torch_free_text(text);
  return out;
}

std::int64_t stat(const char* key) {
  const std::string json = take(cudascope_torch_memory_stats_json(0));
  const std::string quoted = std::string("\"") + key + "\": ";
  const auto at = json.find(quoted);
  EXPECT_NE(at, std::string::npos) << key << " missing from " << json;
  return at == std::string::npos ? -1 : std::stoll(json.substr(at + quoted.size()));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// NAME.PID.EXTENSION in the temp directory (dump_snapshot picks the format by extension).
std::filesystem::path temp_path(const std::string& name, const std::string& extension) {
  return std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()) + extension);
}

class TorchAllocatorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    cudascope_torch_empty_cache();
    EXPECT_EQ(stat("allocated_bytes.all.current"), 0) << "a test left memory allocated";
  }
};

TEST_F(TorchAllocatorTest, AllocAndFreeGoThroughTheCachingAllocator) {
  void* p = cudascope_torch_alloc(1000, 0, nullptr);
  ASSERT_NE(p, nullptr) << cudascope_torch_last_error();
  EXPECT_EQ(stat("allocated_bytes.all.current"), 1024);  // 512-byte rounding, as PyTorch's
  EXPECT_EQ(stat("reserved_bytes.all.current"), 2 * kMiB);  // one small-pool segment
  EXPECT_EQ(stat("requested_bytes.all.current"), 1000);
  cudascope_torch_free(p, 1000, 0, nullptr);
  EXPECT_EQ(stat("allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat("reserved_bytes.all.current"), 2 * kMiB);  // cached until empty_cache
  cudascope_torch_empty_cache();
  EXPECT_EQ(stat("reserved_bytes.all.current"), 0);
}

TEST_F(TorchAllocatorTest, ZeroBytesGiveNullLikePyTorch) {
  const std::int64_t allocations = stat("allocation.all.allocated");
  EXPECT_EQ(cudascope_torch_alloc(0, 0, nullptr), nullptr);
  EXPECT_EQ(stat("allocation.all.allocated"), allocations);
}

TEST_F(TorchAllocatorTest, AStreamsBlocksAreNotHandedToAnotherStream) {
  cuda::Stream side(0);
  void* a = cudascope_torch_alloc(4096, 0, side.handle());
  ASSERT_NE(a, nullptr);
  cudascope_torch_free(a, 4096, 0, side.handle());
  void* b = cudascope_torch_alloc(4096, 0, nullptr);  // the default stream: a new block
  EXPECT_NE(b, a);
  void* c = cudascope_torch_alloc(4096, 0, side.handle());  // the side stream: its cached one
  EXPECT_EQ(c, a);
  cudascope_torch_free(b, 4096, 0, nullptr);
  cudascope_torch_free(c, 4096, 0, side.handle());
}

TEST_F(TorchAllocatorTest, OutOfMemoryReturnsNullWithTheMessageAndWritesTheSnapshot) {
  const auto snapshot = temp_path("torch_oom", ".json");
  setenv("CUDASCOPE_OOM_SNAPSHOT", snapshot.c_str(), 1);
  void* held = cudascope_torch_alloc(3 * kMiB, 0, nullptr);
  EXPECT_EQ(cudascope_torch_alloc(ssize_t{1} << 50, 0, nullptr), nullptr);
  unsetenv("CUDASCOPE_OOM_SNAPSHOT");
  // PyTorch's wording from its first word: no runtime error code or source location before it.
  EXPECT_THAT(cudascope_torch_last_error(), ::testing::StartsWith("CUDA out of memory. Tried to allocate"));
  cudascope_torch_free(held, 3 * kMiB, 0, nullptr);
  ASSERT_TRUE(std::filesystem::exists(snapshot));
  EXPECT_THAT(read_file(snapshot), HasSubstr("\"segments\""));
  EXPECT_THAT(read_file(snapshot), HasSubstr(std::to_string(reinterpret_cast<std::uintptr_t>(held))));
  std::filesystem::remove(snapshot);
}

TEST_F(TorchAllocatorTest, FreeOfAForeignPointerIsReportedNotThrown) {
  int local = 0;
  EXPECT_NO_THROW(cudascope_torch_free(&local, 4, 0, nullptr));
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("not allocated by the caching allocator"));
}

TEST_F(TorchAllocatorTest, BaseAllocationIsTheSegmentHoldingThePointer) {
  void* a = cudascope_torch_alloc(1000, 0, nullptr);
  void* b = cudascope_torch_alloc(1000, 0, nullptr);
  size_t size = 0;
  EXPECT_EQ(cudascope_torch_base_alloc(b, &size), a);  // a opened the 2 MiB segment
  EXPECT_EQ(size, static_cast<size_t>(2 * kMiB));
  int local = 0;
  EXPECT_EQ(cudascope_torch_base_alloc(&local, &size), &local);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("not inside any segment"));
  cudascope_torch_free(a, 1000, 0, nullptr);
  cudascope_torch_free(b, 1000, 0, nullptr);
}

TEST_F(TorchAllocatorTest, RecordStreamAcceptsOurBlocksAndReportsOthers) {
  cuda::Stream side(0);
  void* p = cudascope_torch_alloc(1000, 0, nullptr);
  cudascope_torch_record_stream(p, side.handle());
  EXPECT_STREQ(cudascope_torch_last_error(), "");
  cudascope_torch_free(p, 1000, 0, nullptr);
  side.synchronize();
  int local = 0;
  cudascope_torch_record_stream(&local, side.handle());
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("foreign pointer"));
}

TEST_F(TorchAllocatorTest, ARecordedStreamKeepsTheFreedBlockUntilItsWorkIsDone) {
  cuda::Stream side(0);
  void* x = cudascope_torch_alloc(4 * kMiB, 0, nullptr);
  cuda::busy_wait(std::chrono::milliseconds(300), side);  // side still reads x when x is freed
  cudascope_torch_record_stream(x, side.handle());
  cudascope_torch_free(x, 4 * kMiB, 0, nullptr);
  void* z = cudascope_torch_alloc(4 * kMiB, 0, nullptr);
  EXPECT_NE(z, x) << "x was handed out while the recorded stream was still busy";
  cudascope_torch_free(z, 4 * kMiB, 0, nullptr);
  side.synchronize();
  void* again = cudascope_torch_alloc(4 * kMiB, 0, nullptr);
  EXPECT_EQ(again, x) << "x's block is reused once the recorded stream's work is done";
  cudascope_torch_free(again, 4 * kMiB, 0, nullptr);
}

TEST_F(TorchAllocatorTest, MemoryFractionCapsWhatMayBeReserved) {
  const auto total = static_cast<ssize_t>(cuda::mem_get_info(0).second);
  cudascope_torch_set_memory_fraction(0.25, 0);
  EXPECT_EQ(cudascope_torch_alloc(total / 3, 0, nullptr), nullptr);
  void* p = cudascope_torch_alloc(total / 5, 0, nullptr);
  EXPECT_NE(p, nullptr);
  cudascope_torch_free(p, total / 5, 0, nullptr);
  cudascope_torch_set_memory_fraction(1.0, 0);
}

// The pool hooks as PyTorch's CUDAGraph drives them: begin before capturing with a filter
// naming the capture's stream, allocations on that stream come from the pool and are not
// handed to anything else after they are freed, end after capture, release on reset.
TEST_F(TorchAllocatorTest, PoolHooksServeACapturesStreamFromAPrivatePool) {
  cuda::Stream capture(0);
  void* const capture_stream = capture.handle();
  const cudascope_torch_pool_id pool{7, 0};
  cudascope_torch_begin_allocate_to_pool(0, pool, [capture_stream](void* s) { return s == capture_stream; });
  void* in_pool = cudascope_torch_alloc(3 * kMiB, 0, capture_stream);
  ASSERT_NE(in_pool, nullptr);
  cudascope_torch_free(in_pool, 3 * kMiB, 0, capture_stream);
  cudascope_torch_end_allocate_to_pool(0, pool);

  bool labelled = false;
  for (const auto& segment : cuda::memory::memory_snapshot().segments) {
    const auto address = reinterpret_cast<std::uint64_t>(in_pool);
    if (address >= segment.address && address < segment.address + segment.total_size) {
      labelled = segment.segment_pool_id == std::pair<std::int64_t, std::int64_t>{7, 0};
    }
  }
  EXPECT_TRUE(labelled) << "the segment names the graph's pool";
  void* outside = cudascope_torch_alloc(3 * kMiB, 0, capture_stream);
  EXPECT_NE(outside, in_pool) << "memory a replay writes is not handed out after the capture";
  cudascope_torch_free(outside, 3 * kMiB, 0, capture_stream);

  const std::int64_t reserved = stat("reserved_bytes.all.current");
  cudascope_torch_release_pool(0, pool);
  cudascope_torch_empty_cache();
  EXPECT_LT(stat("reserved_bytes.all.current"), reserved) << "the released pool's segment returns on empty_cache";
  cudascope_torch_release_pool(0, pool);  // without PyTorch in the process, errors stay in last_error
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("is not in use")) << "a pool is released once";
}

TEST_F(TorchAllocatorTest, SummaryAndStatsArePyTorchs) {
  EXPECT_THAT(take(cudascope_torch_memory_summary(0, 0)), HasSubstr("PyTorch CUDA memory summary, device ID 0"));
  const std::string json = take(cudascope_torch_memory_stats_json(0));
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
  EXPECT_EQ(static_cast<std::size_t>(std::count(json.begin(), json.end(), ':')), cuda::memory_stats(0).size());
}

TEST_F(TorchAllocatorTest, ResetPeakLowersThePeakToTheCurrentFigure) {
  void* p = cudascope_torch_alloc(8 * kMiB, 0, nullptr);
  cudascope_torch_free(p, 8 * kMiB, 0, nullptr);
  EXPECT_GE(stat("allocated_bytes.all.peak"), 8 * kMiB);
  EXPECT_EQ(cudascope_torch_reset_peak_memory_stats(0), 0);
  EXPECT_EQ(stat("allocated_bytes.all.peak"), 0);
}

TEST_F(TorchAllocatorTest, BadArgumentsFailWithAMessage) {
  EXPECT_EQ(cudascope_torch_record_memory_history("sometimes", "all", "all", 100), -1);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("enabled='sometimes'"));
  EXPECT_EQ(cudascope_torch_dump_snapshot("/nonexistent-dir/x.json"), -1);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("/nonexistent-dir/x.json"));
  EXPECT_EQ(cudascope_torch_memory_stats_json(99), nullptr);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("out of range"));
}

TEST_F(TorchAllocatorTest, BindingAModuleThatIsNotLoadedSaysSo) {
  EXPECT_EQ(cudascope_torch_bind_torch("/nonexistent/libc10.so"), 0);
  EXPECT_THAT(cudascope_torch_last_error(), HasSubstr("/nonexistent/libc10.so is not loaded"));
}

// NVTX_INJECTION64_PATH points at the library (CMake sets it for this test): this file's own
// NVTX calls, like torch.cuda.nvtx's, reach the allocator's history.
TEST_F(TorchAllocatorTest, NvtxRangesOfAnotherInstanceAnnotateTheHistory) {
  ASSERT_EQ(cudascope_torch_record_memory_history("all", "all", "python", 1000), 0);
  nvtxRangePushA("train_step");
  nvtxRangePushA("forward");
  EXPECT_THAT(cuda::nvtx::range_stack(), ::testing::ElementsAre("train_step", "forward"));
  void* p = cudascope_torch_alloc(1000, 0, nullptr);
  nvtxRangePop();
  nvtxRangePop();
  EXPECT_TRUE(cuda::nvtx::range_stack().empty());
  const auto path = temp_path("torch_nvtx", ".json");
  const int written = cudascope_torch_dump_snapshot(path.c_str());
  cudascope_torch_free(p, 1000, 0, nullptr);
  cudascope_torch_record_memory_history(nullptr, nullptr, "all", 0);
  ASSERT_EQ(written, 0) << cudascope_torch_last_error();
  EXPECT_THAT(read_file(path), HasSubstr("train_step;forward"));
  std::filesystem::remove(path);
}

// NCCL pushes its init calls' ranges with nvtxDomainRangePushEx and pops them with
// nvtxRangePopPayload (the payload extension): that pop must close NCCL's range, or every
// allocation after NCCL's first communicator carried it, and the step's own pop closed it.
TEST_F(TorchAllocatorTest, APopThroughTheNvtxPayloadExtensionClosesTheRangeItEnds) {
  nvtxRangePushA("step 0");
  const nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  const nvtxEventAttributes_t init = cudascope::testing::nvtx_message("ncclCommInitRankConfig");
  nvtxDomainRangePushEx(nccl, &init);
  EXPECT_THAT(cuda::nvtx::range_stack(), ::testing::ElementsAre("step 0", "ncclCommInitRankConfig"));
  nvtxRangePopPayload(nccl, nullptr, 0);
  EXPECT_THAT(cuda::nvtx::range_stack(), ::testing::ElementsAre("step 0"));
  nvtxRangePop();
  EXPECT_TRUE(cuda::nvtx::range_stack().empty());
}

// PyTorch's backward pass allocates on its autograd thread, which opens no range, while the
// loop's "backward" range is open on the main thread: those allocations borrow it.
TEST_F(TorchAllocatorTest, AThreadWithoutRangesBorrowsTheRangesOfTheLastThread) {
  ASSERT_EQ(cudascope_torch_record_memory_history("all", "all", "python", 1000), 0);
  nvtxRangePushA("step 3");
  nvtxRangePushA("backward");
  void* borrowed = nullptr;
  void* own = nullptr;
  std::thread autograd([&] { borrowed = cudascope_torch_alloc(1000, 0, nullptr); });
  autograd.join();
  std::thread other([&] {
    cuda::nvtx::Range range("data loading");  // a thread with a range of its own keeps it
    own = cudascope_torch_alloc(2000, 0, nullptr);
  });
  other.join();
  nvtxRangePop();
  nvtxRangePop();
  const auto path = temp_path("torch_borrow", ".json");
  const int written = cudascope_torch_dump_snapshot(path.c_str());
  cudascope_torch_free(borrowed, 1000, 0, nullptr);
  cudascope_torch_free(own, 2000, 0, nullptr);
  cudascope_torch_record_memory_history(nullptr, nullptr, "all", 0);
  ASSERT_EQ(written, 0) << cudascope_torch_last_error();
  const std::string snapshot = read_file(path);
  std::filesystem::remove(path);
  const std::string borrowed_entry = "\"addr\":" + std::to_string(reinterpret_cast<std::uintptr_t>(borrowed)) +
                                     ",\"size\":1000,";
  const auto at = snapshot.find(borrowed_entry);
  ASSERT_NE(at, std::string::npos) << snapshot;
  EXPECT_THAT(snapshot.substr(at, 200), HasSubstr("\"user_metadata\":\"step 3;backward\""));
  const std::string own_entry = "\"addr\":" + std::to_string(reinterpret_cast<std::uintptr_t>(own)) + ",\"size\":2000,";
  const auto own_at = snapshot.find(own_entry);
  ASSERT_NE(own_at, std::string::npos);
  EXPECT_THAT(snapshot.substr(own_at, 200), HasSubstr("\"user_metadata\":\"data loading\""));
}

// A child process (the default history starts with the allocator): with
// CUDASCOPE_OOM_SNAPSHOT, PyTorch's start of the allocator turns borrowing on, as
// record_memory_history does. Prints the ranges the autograd-like thread's block keeps.
int borrow_under_default_history(int, char**) {
  cudascope_torch_init(cuda::device_count());
  nvtxRangePushA("step 3");
  nvtxRangePushA("backward");
  void* borrowed = nullptr;
  std::thread autograd([&] { borrowed = cudascope_torch_alloc(1000, 0, nullptr); });
  autograd.join();
  nvtxRangePop();
  nvtxRangePop();
  const auto snapshot = cuda::memory::memory_snapshot();
  for (const auto& e : snapshot.device_traces.at(0)) {
    if (e.action == "alloc" && e.addr == reinterpret_cast<std::uintptr_t>(borrowed)) {
      std::printf("%s\n", e.user_metadata.c_str());
    }
  }
  cudascope_torch_free(borrowed, 1000, 0, nullptr);
  return 0;
}
const cudascope::testing::ChildModeRegistrar borrow_mode("--borrow-under-default-history",
                                                         borrow_under_default_history);

TEST(TorchAllocatorDefaultHistoryTest, TheOomHistoryBorrowsRangesForThreadsWithoutThem) {
  const auto path = temp_path("torch_default_history", ".json");  // written only at an OOM
  const auto child =
      cudascope::testing::run_self({"--borrow-under-default-history"}, {"CUDASCOPE_OOM_SNAPSHOT=" + path.string()});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_EQ(child.output, "step 3;backward\n");
}

}  // namespace
