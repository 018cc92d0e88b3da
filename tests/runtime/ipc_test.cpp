// CUDA IPC of tensors between two processes: this test process shares, a second process
// (this executable started again, ipc_children.h) opens, reads and writes. On sim the
// memory goes through POSIX shared memory; with CUDASCOPE_BACKEND=cuda through CUDA IPC.
#include "ipc_children.h"

#include <cudascope/cuda/ipc.h>

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <mutex>

namespace cuda = cudascope::cuda;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
using cudascope::testing::run_ipc_child;

namespace {

TensorOptions on_cuda() { return TensorOptions{}.with_device(Device::cuda(0)); }

double sum_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum;
}

char* number(double value) {
  static char text[64];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

class IpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cuda::set_device(0);
    ipc_collect();
  }
  static void ipc_collect() { cuda::ipc_collect(); }
};

}  // namespace

TEST_F(IpcTest, AnotherProcessReadsAndWritesTheSharedTensor) {
  // A view in the middle of its storage, in a segment other blocks share: the handle must
  // carry both the storage's offset in the segment and the view's offset in the storage.
  const Tensor before = cudascope::zeros({128}, on_cuda());
  const Tensor whole = cudascope::arange(3000, on_cuda());
  const Tensor view = whole.narrow(0, 1000, 1000);
  const cuda::SharedTensorHandle handle = cuda::share_tensor(view);
  EXPECT_EQ(handle.storage_offset, 1000);
  EXPECT_EQ(handle.storage_size_bytes, 3000u * 4);
  EXPECT_EQ(handle.device, 0);

  const auto child = run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  // The child saw 1000..1999 (the producer's work was done before it read: the event).
  EXPECT_THAT(child.output, ::testing::HasSubstr(std::string("sum=") + number((1000.0 + 1999.0) * 1000 / 2)));
  EXPECT_THAT(child.output, ::testing::HasSubstr("same_base=1 open_handles=1"));
  EXPECT_THAT(child.output, ::testing::HasSubstr("open_handles_after=0"));

  const std::vector<double> values = whole.to_vector();
  for (int i = 0; i < 3000; ++i) {
    const double wanted = i >= 1000 && i < 2000 ? 2.0 * i + 1 : i;
    ASSERT_EQ(values[static_cast<std::size_t>(i)], wanted) << i;
  }
  EXPECT_EQ(sum_of(before.to_vector()), 0.0) << "a neighbouring block of the segment was written";
}

TEST_F(IpcTest, TheConsumerWaitsForWorkQueuedBeforeTheShare) {
  Tensor t = cudascope::zeros({4096}, on_cuda());
  cuda::share_tensor(t);  // the segment is shared already: the next share waits for nothing
  // Still queued when the consumer opens the tensor: a long kernel, then the values.
  cuda::busy_wait(std::chrono::milliseconds(500), cuda::current_stream(0));
  t.fill_(5.0);
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  ASSERT_TRUE(handle.event_sync_required);
  EXPECT_FALSE(cuda::current_stream(0).query()) << "the producer's work should still be running";
  const auto child = run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr(std::string("sum=") + number(5.0 * 4096)))
      << "the consumer read before the producer's queued fill";
  EXPECT_EQ(sum_of(t.to_vector()), 11.0 * 4096);
}

TEST_F(IpcTest, TheHandleSurvivesItsTextForm) {
  const Tensor t = cudascope::arange(12, on_cuda()).view({3, 4}).narrow(1, 1, 2);
  const cuda::SharedTensorHandle h = cuda::share_tensor(t);
  const cuda::SharedTensorHandle back = cuda::SharedTensorHandle::parse(h.serialize());
  EXPECT_EQ(back.device, h.device);
  EXPECT_EQ(back.mem_handle, h.mem_handle);
  EXPECT_EQ(back.segment_size_bytes, h.segment_size_bytes);
  EXPECT_GE(h.segment_size_bytes, h.storage_offset_bytes + h.storage_size_bytes);
  EXPECT_EQ(back.storage_offset_bytes, h.storage_offset_bytes);
  EXPECT_EQ(back.storage_size_bytes, h.storage_size_bytes);
  EXPECT_EQ(back.ref_counter_handle, h.ref_counter_handle);
  EXPECT_EQ(back.ref_counter_offset, h.ref_counter_offset);
  EXPECT_EQ(back.event_handle, h.event_handle);
  EXPECT_EQ(back.event_sync_required, h.event_sync_required);
  EXPECT_EQ(back.dtype, h.dtype);
  EXPECT_EQ(back.sizes, (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(back.strides, (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(back.storage_offset, 1);
}

TEST(IpcHandleTextTest, BadTextNamesWhatIsWrong) {
  EXPECT_THROW(cuda::SharedTensorHandle::parse("not a handle"), cuda::Error);
  try {
    cuda::SharedTensorHandle::parse("cudascope-ipc-2 device=0");
    FAIL();
  } catch (const cuda::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'mem' is missing"));
  }
  cuda::SharedTensorHandle h;
  std::string text = h.serialize();
  text.replace(text.find("dtype=float32"), 13, "dtype=float99");
  try {
    cuda::SharedTensorHandle::parse(text);
    FAIL();
  } catch (const cuda::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'dtype'"));
  }
}

TEST_F(IpcTest, AFreedSharedBlockWaitsUntilTheConsumerReleasesIt) {
  const auto allocated = cuda::memory_allocated(0);
  Tensor t = cudascope::full({1 << 16}, 3.0, on_cuda());
  const std::int64_t block = cuda::memory_allocated(0) - allocated;
  // Other tests leave shares nobody opened (they wait forever, as in torch): count from here.
  const cuda::IpcStats before = cuda::ipc_stats();
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  EXPECT_EQ(cuda::ipc_stats().lent_blocks, before.lent_blocks + 1);
  EXPECT_EQ(cuda::ipc_stats().counters_in_use, before.counters_in_use + 1);

  t = Tensor();  // the producer lets go; the consumer has not released (it has not even run)
  EXPECT_EQ(cuda::memory_allocated(0), allocated + block) << "the block must wait for the consumer";
  EXPECT_EQ(cuda::ipc_stats().limbo_blocks, before.limbo_blocks + 1);
  EXPECT_FALSE(cuda::ipc_collect());

  const auto child = run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr(std::string("sum=") + number(3.0 * (1 << 16))));

  EXPECT_TRUE(cuda::ipc_collect());
  EXPECT_EQ(cuda::memory_allocated(0), allocated);
  const cuda::IpcStats after = cuda::ipc_stats();
  EXPECT_EQ(after.limbo_blocks, before.limbo_blocks);
  EXPECT_EQ(after.counters_in_use, before.counters_in_use);
}

TEST_F(IpcTest, AnAllocationThatMissesTheCacheCollectsReleasedBlocksFirst) {
  const auto allocated = cuda::memory_allocated(0);
  Tensor t = cudascope::full({1 << 16}, 1.0, on_cuda());
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  t = Tensor();
  const auto child = run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  const std::size_t limbo = cuda::ipc_stats().limbo_blocks;
  ASSERT_GE(limbo, 1u);
  // No ipc_collect(): a request no cached block fits runs it, as torch's free-memory callback.
  const Tensor big = cudascope::empty({48 << 20}, on_cuda().with_dtype(cudascope::DType::kUInt8));
  EXPECT_EQ(cuda::ipc_stats().limbo_blocks, limbo - 1);
  EXPECT_EQ(cuda::memory_allocated(0), allocated + static_cast<std::int64_t>(big.nbytes()));
}

namespace {
// A fresh process: one share, consumed by a grandchild, then collected; prints the counters
// files left (none: an idle file goes at ipc_collect, as torch's safe_clean_current_file).
int collect_child(int, char**) {
  cuda::set_device(0);
  Tensor t = cudascope::ones({32}, TensorOptions{}.with_device(Device::cuda(0)));
  const auto consumer = run_ipc_child("--ipc-write-child", cuda::share_tensor(t));
  if (consumer.exit_code != 0) return 11;
  const std::size_t files_while_shared = cuda::ipc_stats().counter_files;
  t = Tensor();
  cuda::ipc_collect();
  std::printf("files_while_shared=%zu files_after=%zu\n", files_while_shared, cuda::ipc_stats().counter_files);
  return 0;
}
const cudascope::testing::ChildModeRegistrar collect_mode{"--ipc-collect-child", &collect_child};
}  // namespace

TEST_F(IpcTest, AnIdleCountersFileIsRemovedByIpcCollect) {
  const auto child = cudascope::testing::run_self({"--ipc-collect-child"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("files_while_shared=1 files_after=0"));
}

TEST_F(IpcTest, ABlockReleasedByItsConsumerIsFreedWhenTheProducerLetsGo) {
  const auto allocated = cuda::memory_allocated(0);
  Tensor t = cudascope::full({256}, 1.0, on_cuda());
  const auto child = run_ipc_child("--ipc-write-child", cuda::share_tensor(t));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_EQ(sum_of(t.to_vector()), 256 * 3.0);
  t = Tensor();
  EXPECT_EQ(cuda::memory_allocated(0), allocated) << "no ipc_collect needed: the counter already read 0";
}

TEST_F(IpcTest, AConsumerThatNeverReleasesKeepsTheBlock) {
  const auto allocated = cuda::memory_allocated(0);
  Tensor t = cudascope::ones({512}, on_cuda());
  const std::int64_t block = cuda::memory_allocated(0) - allocated;
  const auto child = run_ipc_child("--ipc-hold-child", cuda::share_tensor(t));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("numel=512"));
  t = Tensor();
  EXPECT_FALSE(cuda::ipc_collect());
  EXPECT_EQ(cuda::memory_allocated(0), allocated + block) << "as torch: a dead consumer's share is never collected";
  EXPECT_GE(cuda::ipc_stats().limbo_blocks, 1u);
}

TEST_F(IpcTest, EachShareTakesItsOwnCounter) {
  const Tensor t = cudascope::ones({64}, on_cuda());
  const auto before = cuda::ipc_stats().counters_in_use;
  const cuda::SharedTensorHandle first = cuda::share_tensor(t);
  const cuda::SharedTensorHandle second = cuda::share_tensor(t);
  EXPECT_EQ(cuda::ipc_stats().counters_in_use, before + 2);
  EXPECT_EQ(first.mem_handle, second.mem_handle) << "one segment, one handle";
  EXPECT_TRUE(first.ref_counter_handle != second.ref_counter_handle || first.ref_counter_offset != second.ref_counter_offset);
  EXPECT_TRUE(first.event_sync_required);
}

TEST_F(IpcTest, WhatCannotBeSharedIsRefused) {
  EXPECT_THROW(cuda::share_tensor(cudascope::ones({4})), cuda::Error);  // CPU
  EXPECT_THROW(cuda::share_tensor(Tensor()), cuda::Error);
  EXPECT_THROW(cuda::share_tensor(cudascope::empty({0}, on_cuda())), cuda::Error);
  // A process cannot open its own handle, as in CUDA.
  const Tensor t = cudascope::ones({4}, on_cuda());
  EXPECT_THROW(cuda::open_shared_tensor(cuda::share_tensor(t)), cuda::Error);
  // A view past the storage is refused before anything is opened.
  cuda::SharedTensorHandle h = cuda::share_tensor(t);
  h.sizes = {5};
  EXPECT_THROW(cuda::open_shared_tensor(h), cuda::Error);
}

TEST_F(IpcTest, ExpandableSegmentsCannotBeShared) {
  cuda::memory::set_allocator_settings("expandable_segments:True");
  std::string refusal;
  {
    cuda::empty_cache();  // a new segment, not a cached block of an ordinary one
    const Tensor t = cudascope::ones({8 << 20}, on_cuda());
    try {
      cuda::share_tensor(t);
    } catch (const cuda::Error& e) {
      refusal = e.what();
    }
  }
  cuda::empty_cache();  // the expandable segment must not serve later tests' allocations
  cuda::memory::set_allocator_settings("");
  EXPECT_THAT(refusal, ::testing::HasSubstr("expandable segment"));
}

// The sim's own model: a shared segment moves into a shared-memory object (named in the
// handle) that lives as long as the segment.
TEST_F(IpcTest, SimSharedSegmentLivesInSharedMemoryUntilFreed) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "the sim backend's shared memory";
  Tensor t = cudascope::arange(1 << 20, on_cuda());  // 4 MiB: a 20 MiB segment of the large pool
  const cuda::SharedTensorHandle handle = cuda::share_tensor(t);
  EXPECT_EQ(t.to_vector()[12345], 12345.0) << "sharing moved the pages with their contents";
  const char* name = reinterpret_cast<const char*>(handle.mem_handle.data() + 8);
  const std::string path = "/dev/shm" + std::string(name, strnlen(name, 40));
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0) << path;
  EXPECT_GE(static_cast<std::size_t>(info.st_size), t.nbytes());

  const auto child = run_ipc_child("--ipc-write-child", handle);
  ASSERT_EQ(child.exit_code, 0) << child.output;
  t = Tensor();
  cuda::ipc_collect();
  cuda::empty_cache();
  EXPECT_NE(stat(path.c_str(), &info), 0) << "the name goes with the segment";
}

namespace {
class ApiRecorder : public cuda::instrumentation::Observer {
 public:
  void on_allocator_event(const cuda::instrumentation::AllocatorEvent&) override {}
  void on_api_call(const cuda::instrumentation::ApiCall& call) override {
    std::lock_guard lock(mutex);
    names.emplace_back(call.name);
  }
  std::mutex mutex;
  std::vector<std::string> names;
};
}  // namespace

// One thread closing a segment while another opens the same handle: the reopen waits for the
// close, so the handle is never mapped twice at once (torch maps a handle once per process).
TEST_F(IpcTest, AReopenWaitsForTheCloseOfTheSameHandle) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "counts the sim backend's reported IPC calls";
  const Tensor t = cudascope::ones({1024}, on_cuda());
  const auto child = run_ipc_child("--ipc-reopen-child", cuda::share_tensor(t));
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("most_mapped=1 mapped_after=0"));
  EXPECT_THAT(child.output, ::testing::Not(::testing::HasSubstr("opens=0 ")));
}

TEST_F(IpcTest, ACorruptHandleIsRefusedBeforeAnyDeviceWork) {
  const Tensor t = cudascope::ones({4, 4}, on_cuda());
  const cuda::SharedTensorHandle good = cuda::share_tensor(t);
  const std::size_t opened = cuda::ipc_stats().open_mem_handles;
  for (int corruption = 0; corruption < 3; ++corruption) {
    cuda::SharedTensorHandle h = good;
    const char* named = "";
    if (corruption == 0) h.sizes[0] = -4, named = "sizes[0] is -4";
    if (corruption == 1) h.storage_offset_bytes = h.segment_size_bytes, named = "reaches past the segment";
    if (corruption == 2) h.strides[1] = std::int64_t{1} << 62, named = "overflows 64 bits";
    ApiRecorder recorder;
    cuda::instrumentation::set_observer(&recorder);
    std::string why;
    try {
      cuda::open_shared_tensor(h);
    } catch (const cuda::Error& e) {
      why = e.what();
    }
    cuda::instrumentation::set_observer(nullptr);
    // Not the refusal of opening one's own handle, which comes from the device.
    EXPECT_THAT(why, ::testing::HasSubstr(named)) << corruption;
    EXPECT_THAT(recorder.names, ::testing::Not(::testing::Contains("cudaIpcOpenMemHandle"))) << corruption;
    EXPECT_EQ(cuda::ipc_stats().open_mem_handles, opened);
  }
}

TEST_F(IpcTest, SharingIsReportedAsTheCudaCall) {
  if (cudascope::testing::on_cuda_backend()) GTEST_SKIP() << "on cuda, CUPTI reports the runtime's calls";
  const Tensor t = cudascope::ones({16}, on_cuda());
  ApiRecorder recorder;
  cuda::instrumentation::set_observer(&recorder);
  cuda::share_tensor(t);
  cuda::instrumentation::set_observer(nullptr);
  EXPECT_THAT(recorder.names, ::testing::Contains("cudaIpcGetMemHandle"));
}
