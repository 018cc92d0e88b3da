// Frames hidden from stacks (the unwinder's, the allocators', the interpreter's glue) and the
// user frame that names an allocation, on stacks as PyTorch records them with C++ frames.
#include "snapshot_test_support.h"
#include "stack_frames_fixture.h"

#include <cudascope/analysis/compare.h>
#include <cudascope/analysis/stack_frames.h>

namespace cudascope::analysis {
namespace {

using testing::cpp_stack_snapshot;

std::vector<std::string> texts(const Snapshot& s, const std::vector<FrameId>& frames) {
  std::vector<std::string> out;
  for (FrameId f : frames) out.push_back(s.frame_text(f));
  return out;
}

TEST(StackFramesTest, HidesTheUnwindersAndAllocatorsFramesAsMemoryVizDoes) {
  EXPECT_TRUE(hidden_frame("torch::unwind::unwind()", "??"));
  EXPECT_TRUE(hidden_frame("torch::CapturedTraceback::gather(bool, bool, bool)", "??"));
  EXPECT_TRUE(hidden_frame("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", "??"));
  EXPECT_TRUE(hidden_frame("_PyEval_EvalFrameDefault", "Python/ceval.c"));
  EXPECT_TRUE(hidden_frame("_start", "??"));
  EXPECT_TRUE(hidden_frame("cudascope::cuda::detail::alloc::DeviceAllocator::malloc(unsigned long, CUstream_st*)",
                           "libcudascope_runtime.so"));
  EXPECT_TRUE(hidden_frame("torch_malloc", "libcudascope_torch_allocator.so"));
  EXPECT_FALSE(hidden_frame("at::native::empty_cuda(...)", "??"));
  EXPECT_FALSE(hidden_frame("train_step", "train.py"));
  EXPECT_FALSE(hidden_frame("range_start", "train.py"));  // "_start" only as the whole name
}

TEST(StackFramesTest, LibraryFramesAreTorchPythonAndSharedObjectsNotTheScript) {
  EXPECT_TRUE(library_frame("forward", "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py"));
  EXPECT_TRUE(library_frame("forward", "torch/nn/modules/linear.py"));
  EXPECT_TRUE(library_frame("at::TensorBase at::detail::empty_cuda(c10::ArrayRef<long>)", "aten/src/ATen/EmptyTensor.cpp"));
  EXPECT_TRUE(library_frame("cudascope::Tensor::empty(...)", "libcudascope_runtime.so"));
  EXPECT_TRUE(library_frame("<lambda>", "<frozen importlib._bootstrap>"));
  EXPECT_FALSE(library_frame("train_step", "train.py"));
  EXPECT_FALSE(library_frame("main", "trainer"));                    // our runtime's C++ user program
  EXPECT_FALSE(library_frame("format::render(int)", "my/format.cpp"));  // "at::" only as a whole token
}

TEST(StackFramesTest, VisibleFramesUserFrameAndTopFrame) {
  const Snapshot s = cpp_stack_snapshot();
  ASSERT_EQ(s.trace.size(), 3u);
  const FrameIndex index(s);
  const StackId full = s.trace[1].stack;
  EXPECT_EQ(texts(s, index.visible(full)),
            (std::vector<std::string>{"at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*) (??:0)",
                                      "forward (/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py:125)",
                                      "train_step (train.py:12)", "<module> (train.py:40)"}));
  EXPECT_EQ(index.hidden_count(full), 7u);
  ASSERT_TRUE(index.user_frame(full));
  EXPECT_EQ(s.frame_text(*index.user_frame(full)), "train_step (train.py:12)");
  ASSERT_TRUE(index.top_frame(full));
  EXPECT_EQ(s.frame_text(*index.top_frame(full)).rfind("at::TensorBase", 0), 0u);

  const StackId allocator_only = s.trace[2].stack;
  EXPECT_TRUE(index.visible(allocator_only).empty());
  EXPECT_FALSE(index.user_frame(allocator_only));
  EXPECT_EQ(group_key(index, allocator_only, GroupBy::user_frame), "<no stack recorded>");
}

TEST(StackFramesTest, TextMatchIsWhatTheViewerShowsIgnoringCase) {
  const Snapshot s = cpp_stack_snapshot();
  const FrameIndex index(s);
  const StackId full = s.trace[1].stack;
  for (const char* needle : {"train.py:12", "TRAIN_STEP (train", "linear.py:125", "_empty_generic"})
    EXPECT_TRUE(index.stack_matches(full, index.match_frames(needle))) << needle;
  // Hidden frames are not searched, and "file:line" must be the displayed pair.
  for (const char* needle : {"CUDACachingAllocator", "unwind", "train.py:13", "train.py 12"})
    EXPECT_FALSE(index.stack_matches(full, index.match_frames(needle))) << needle;
}

TEST(StackFramesTest, CompareGroupsByTheUserFrameNeverAnAllocatorFrame) {
  const Snapshot a = cpp_stack_snapshot();
  const Snapshot b = cpp_stack_snapshot();
  const Comparison user = compare_snapshots(a, b, GroupBy::user_frame);
  std::vector<std::string> frames;
  for (const auto& row : user.rows) frames.push_back(row.frame);
  std::sort(frames.begin(), frames.end());
  // The block allocated by the allocator alone falls back on its alloc entry: no visible frame.
  EXPECT_EQ(frames, (std::vector<std::string>{"<no stack recorded>", "train_step (train.py:12)"}));
  for (const auto& row : compare_snapshots(a, b, GroupBy::top_frame).rows)
    EXPECT_EQ(row.frame.find("CUDACachingAllocator"), std::string::npos) << row.frame;
}

}  // namespace
}  // namespace cudascope::analysis
