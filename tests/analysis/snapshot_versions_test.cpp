// The snapshot readers on the shapes other PyTorch releases write (tests/data/
// make_snapshot_shapes.py builds each with the keys that release's writer puts in it, and
// says which source it was read from). The figures are counted by hand from that script.
#include "snapshot_test_support.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/file_kind.h>

namespace cudascope::analysis {
namespace {

using testing::data_path;
using testing::load_fixture;

std::string top_frame(const Snapshot& snap, StackId stack) {
  const auto frames = snap.stack(stack);
  return frames.empty() ? std::string() : std::string(snap.str(snap.frames.get(frames.front()).name));
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

}  // namespace
}  // namespace cudascope::analysis
