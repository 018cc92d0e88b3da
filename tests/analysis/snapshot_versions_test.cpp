// The snapshot readers on the shapes other PyTorch releases write (tests/data/
// make_snapshot_shapes.py builds each with the keys that release's writer puts in it, and
// says which source it was read from). The figures are counted by hand from that script.
#include "snapshot_test_support.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/file_kind.h>

#include <fstream>

namespace cudascope::analysis {
namespace {

using testing::data_path;
using testing::load_fixture;

std::string top_frame(const Snapshot& snap, StackId stack) {
  const auto frames = snap.stack(stack);
  return frames.empty() ? std::string() : std::string(snap.str(snap.frames.get(frames.front()).name));
}

// PyTorch before 2.1: blocks carry no "requested_size" (1.13) and no "frames"; both are in
// the block's "history", newest first, as torch/cuda/_memory_viz.py's _block_extra_legacy
// reads them. The file is torch.cuda.memory_snapshot()'s bare list of segments.
TEST(SnapshotVersionsTest, Pt113HistoryGivesRequestedBytesAndStacks) {
  for (const char* name : {"snap_shape_pt113.pickle", "snap_shape_pt113.json"}) {
    SCOPED_TRACE(name);
    const Snapshot snap = load_fixture(name);
    const Figures f = compute_figures(snap);
    EXPECT_EQ(f.segments, 2u);
    EXPECT_EQ(f.blocks, 5u);
    EXPECT_EQ(f.trace_entries, 0u);
    EXPECT_EQ(f.reserved_bytes, 23068672u);
    EXPECT_EQ(f.allocated_bytes, 8389632u);
    EXPECT_EQ(f.active_bytes, 8390144u);
    // What was asked for: 1000 + 400 + 8000000 (history[0].real_size of the active blocks),
    // not their rounded sizes; the allocated blocks' rounding is 24 + 388608.
    EXPECT_EQ(f.requested_bytes, 8001400u);
    EXPECT_EQ(f.internal_fragmentation_bytes, 388632u);
    EXPECT_EQ(f.inactive_bytes, 14678528u);
    EXPECT_EQ(f.largest_free_block, 12582912u);
    ASSERT_EQ(snap.blocks.size(), 5u);
    EXPECT_EQ(snap.blocks[0].address, 139637976727552u) << "blocks without an address follow one another";
    EXPECT_EQ(snap.blocks[1].address, 139637976727552u + 1024);
    EXPECT_EQ(top_frame(snap, snap.blocks[0].stack), "forward") << "the newest history entry's frames";
    EXPECT_EQ(top_frame(snap, snap.blocks[1].stack), "step");
    EXPECT_EQ(snap.blocks[3].requested_size, 8000000u);
    EXPECT_EQ(snap.stack(snap.blocks[3].stack).size(), 0u) << "a history entry without frames";
  }
}

// torch.cuda.memory_snapshot() returns the bare list of segments; dumped as JSON it is an
// array, as a trace's events may be: its first object's keys tell which.
TEST(SnapshotVersionsTest, AJsonListOfSegmentsIsASnapshotAndAnArrayOfEventsATrace) {
  const auto segments = detect_file_kind(data_path("snap_shape_pt113.json"));
  ASSERT_TRUE(segments) << segments.error().message();
  EXPECT_EQ(segments.value(), FileKind::snapshot);
  for (const char* trace : {"chrome_plain.json", "kineto_shape_2022.json", "trace_golden.json"}) {
    const auto kind = detect_file_kind(data_path(trace));
    ASSERT_TRUE(kind) << kind.error().message();
    EXPECT_EQ(kind.value(), FileKind::trace) << trace;
  }
  for (const std::string text : {"[]", "[\n  {\"name\": \"frame\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1}]",
                                 "[{\"device\": 0, \"address\": 4096, \"total_size\": 2097152, \"blocks\": []}]"}) {
    const std::string path = ::testing::TempDir() + "/kind.json";
    std::ofstream(path) << text;
    const auto kind = detect_file_kind(path);
    ASSERT_TRUE(kind) << kind.error().message();
    EXPECT_EQ(kind.value(), text.find("total_size") != std::string::npos ? FileKind::snapshot : FileKind::trace) << text;
  }
}

// PyTorch 2.0: blocks have "requested_size" but their stacks are still in "history"; trace
// entries have no "time_us", may carry "cpp_frames", and an OOM has "device_free", no "addr".
TEST(SnapshotVersionsTest, Pt20TraceWithoutTimesAndAnOomWithDeviceFree) {
  const Snapshot snap = load_fixture("snap_shape_pt20.pickle");
  const Figures f = compute_figures(snap);
  EXPECT_EQ(f.reserved_bytes, 2097152u);
  EXPECT_EQ(f.requested_bytes, 500u);
  EXPECT_EQ(f.internal_fragmentation_bytes, 12u);
  EXPECT_EQ(top_frame(snap, snap.blocks[0].stack), "forward");
  EXPECT_FALSE(snap.has_times);
  ASSERT_EQ(snap.trace.size(), 6u);
  EXPECT_EQ(f.actions[static_cast<int>(Action::alloc)], 2u);
  EXPECT_EQ(f.actions[static_cast<int>(Action::free_completed)], 1u);
  EXPECT_EQ(f.oom_entries, 1u);
  EXPECT_EQ(snap.trace[5].time_us, 5) << "entries numbered in file order";
  EXPECT_EQ(snap.trace[5].size, 85899345920u);
  ASSERT_EQ(snap.oom_device_free.size(), 1u);
  EXPECT_EQ(snap.oom_device_free[0], (std::pair<uint32_t, uint64_t>{5, 1048576}));
  EXPECT_EQ(top_frame(snap, snap.trace[5].stack), "step");
  EXPECT_EQ(f.peak_reserved_bytes, 2097152u);
  EXPECT_EQ(f.peak_allocated_bytes, 1524u) << "500 live at the end, 1024 more before its free";
}

// The newest PyTorch: _annotate_memory() records an "annotate" entry on a live allocation;
// pinned host memory has its own "host_segments"/"host_traces", which are not the device's.
TEST(SnapshotVersionsTest, LatestAnnotateEntriesAndHostMemoryKeys) {
  for (const char* name : {"snap_shape_latest.pickle", "snap_shape_latest.json"}) {
    SCOPED_TRACE(name);
    const Snapshot snap = load_fixture(name);
    const Figures f = compute_figures(snap);
    EXPECT_EQ(f.segments, 1u);
    EXPECT_EQ(f.blocks, 3u);
    EXPECT_EQ(f.reserved_bytes, 2097152u);
    EXPECT_EQ(f.allocated_bytes, 1024u);
    EXPECT_EQ(f.active_bytes, 1536u);
    EXPECT_EQ(f.requested_bytes, 1400u);
    EXPECT_EQ(f.internal_fragmentation_bytes, 24u);
    ASSERT_EQ(snap.trace.size(), 5u) << "the host trace's entry is not the device's";
    EXPECT_EQ(snap.trace[3].action, Action::annotate);
    EXPECT_EQ(action_name(snap.trace[3].action), "annotate");
    EXPECT_EQ(snap.str(snap.trace[3].user_metadata), "saved for backward");
    EXPECT_EQ(snap.trace[3].addr, 139637976727552u);
    EXPECT_EQ(f.actions[static_cast<int>(Action::annotate)], 1u);
    EXPECT_EQ(f.actions[static_cast<int>(Action::alloc)], 2u);
    // An annotation changes no memory: the peaks are those of the allocations.
    EXPECT_EQ(f.peak_allocated_bytes, 1400u);
    EXPECT_EQ(top_frame(snap, snap.blocks[0].stack), "forward") << "frames with fx_* fields";
    EXPECT_EQ(snap.annotations.size(), 2u);
    EXPECT_EQ(snap.allocator_settings.size(), 5u);
  }
}

// _snapshot's docstring types a block waiting for another stream as "active_awaiting_free";
// the allocator writes "active_pending_free". Tools that write snapshots from the docstring's
// types use the former: it is the same state, in the pickle and the JSON reader alike.
TEST(SnapshotVersionsTest, DocstringsActiveAwaitingFreeIsActivePendingFree) {
  for (const char* name : {"snap_shape_docstring.pickle", "snap_shape_docstring.json"}) {
    SCOPED_TRACE(name);
    const Snapshot snap = load_fixture(name);
    ASSERT_EQ(snap.blocks.size(), 3u);
    EXPECT_EQ(snap.blocks[1].state, BlockState::active_pending_free);
    EXPECT_EQ(block_state_name(snap.blocks[1].state), "active_pending_free");
    const Figures f = compute_figures(snap);
    EXPECT_EQ(f.reserved_bytes, 2097152u);
    EXPECT_EQ(f.allocated_bytes, 1024u);
    EXPECT_EQ(f.active_bytes, 1536u);
    // The waiting block still holds what was asked for (1000 + 400) and is not free memory.
    EXPECT_EQ(f.requested_bytes, 1400u);
    EXPECT_EQ(f.internal_fragmentation_bytes, 24u);
    EXPECT_EQ(f.inactive_bytes, 2097152u - 1536u);
    EXPECT_EQ(f.largest_free_block, 2097152u - 1536u);
    EXPECT_EQ(f.trace_entries, 4u);
    EXPECT_FALSE(snap.has_times) << "the docstring's TraceEntry has no time_us";
    EXPECT_EQ(snap.segments[0].device, 0) << "nor does its Segment have a device";
  }
  EXPECT_EQ(parse_block_state("active_awaiting_free"), BlockState::active_pending_free);
  EXPECT_EQ(parse_block_state("awaiting_free"), std::nullopt);
}

// expandable_segments:True (2.1 on): the segment grows and shrinks by mapping pages; the peak
// reserved is what was mapped at most, before the tail was unmapped.
TEST(SnapshotVersionsTest, ExpandableSegmentMapsAndUnmapsGiveThePeaks) {
  const Snapshot snap = load_fixture("snap_shape_expandable.pickle");
  const Figures f = compute_figures(snap);
  ASSERT_EQ(snap.segments.size(), 1u);
  EXPECT_TRUE(snap.segments[0].is_expandable);
  EXPECT_EQ(f.reserved_bytes, 4194304u);
  EXPECT_EQ(f.requested_bytes, 3000000u);
  EXPECT_EQ(f.actions[static_cast<int>(Action::segment_map)], 1u);
  EXPECT_EQ(f.actions[static_cast<int>(Action::segment_unmap)], 1u);
  EXPECT_EQ(f.actions[static_cast<int>(Action::snapshot)], 1u);
  EXPECT_EQ(f.peak_reserved_bytes, 6291456u) << "6 MiB mapped before 2 MiB were unmapped";
  EXPECT_EQ(f.peak_allocated_bytes, 4048576u) << "1048576 and 3000000 live together";
}

}  // namespace
}  // namespace cudascope::analysis
