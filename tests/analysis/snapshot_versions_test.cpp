// The snapshot readers on the shapes other PyTorch releases write (tests/data/
// make_snapshot_shapes.py builds each with the keys that release's writer puts in it, and
// says which source it was read from). The figures are counted by hand from that script.
#include "snapshot_test_support.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/file_kind.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace cudascope::analysis {
namespace {

using testing::data_path;
using testing::load_fixture;

std::string top_frame(const Snapshot& snap, StackId stack) {
  const auto frames = snap.stack(stack);
  return frames.empty() ? std::string() : std::string(snap.str(snap.frames.get(frames.front()).name));
}

// `v` as a pickle (protocol 2) of dicts, lists, strings, non-negative integers and None, as
// pickle.dumps writes them without a memo: the same snapshot for both readers.
void append_pickle(const nlohmann::ordered_json& v, std::string& out) {
  const auto little_endian = [&](std::uint64_t n, int bytes) {
    for (int i = 0; i < bytes; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  };
  if (v.is_object()) {
    out += "}(";  // EMPTY_DICT MARK
    for (const auto& [key, value] : v.items()) {
      append_pickle(key, out);
      append_pickle(value, out);
    }
    out += 'u';  // SETITEMS
  } else if (v.is_array()) {
    out += "](";  // EMPTY_LIST MARK
    for (const auto& item : v) append_pickle(item, out);
    out += 'e';  // APPENDS
  } else if (v.is_string()) {
    const std::string& text = v.get_ref<const std::string&>();
    out += 'X';  // BINUNICODE
    little_endian(text.size(), 4);
    out += text;
  } else if (v.is_number_integer()) {
    out += '\x8a';  // LONG1: 8 bytes and a 0 byte keep it positive
    out += '\x09';
    little_endian(v.get<std::uint64_t>(), 8);
    out += '\0';
  } else {
    out += 'N';  // NONE
  }
}

std::string as_pickle(const nlohmann::ordered_json& v) {
  std::string out = "\x80\x02";  // PROTO 2
  append_pickle(v, out);
  return out + '.';  // STOP
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

// A block's "history" stands in only for what the block lacks: its newest entry's "real_size"
// where the block has no "requested_size", its "frames" where the block has none. An entry
// without "real_size" is fine beside a block's own requested size, and the frames of an entry
// the block does not use are not read. One rule for the pickle and the JSON reader, wherever
// "history" comes among the block's keys.
TEST(SnapshotVersionsTest, HistoryGivesOnlyWhatTheBlockLacks) {
  using json = nlohmann::ordered_json;  // keys in the order written here
  const std::uint64_t a = 139637976727552;
  const auto frames = [](const char* name) {
    return json::array({json::object({{"filename", "train.py"}, {"name", name}, {"line", 7}})});
  };
  const auto entry = [&](std::uint64_t addr, const char* frame) { return json::object({{"addr", addr}, {"frames", frames(frame)}}); };
  json used_by_none = entry(a, "never_read");
  used_by_none["real_size"] = 999;
  const json blocks = json::array({
      // Its own requested size and frames: the history, first here, is not read at all.
      json::object({{"history", json::array({used_by_none})},
                    {"size", 1024},
                    {"requested_size", 1000},
                    {"state", "active_allocated"},
                    {"frames", frames("forward")}}),
      // Its own requested size, no frames: the newest entry's frames, though it has no "real_size".
      json::object({{"size", 512},
                    {"requested_size", 400},
                    {"state", "active_allocated"},
                    {"history", json::array({entry(a + 1024, "step"), entry(a + 1024, "older")})}}),
      json::object({{"size", 2097152 - 1536}, {"state", "inactive"}}),
  });
  const json segment = json::object({{"device", 0},
                                     {"address", a},
                                     {"total_size", 2097152},
                                     {"allocated_size", 1536},
                                     {"active_size", 1536},
                                     {"stream", 0},
                                     {"segment_type", "small"},
                                     {"blocks", blocks}});
  const json snapshot = json::object({{"segments", json::array({segment})}, {"device_traces", json::array({json::array()})}});
  for (const bool pickle : {false, true}) {
    SCOPED_TRACE(pickle ? "pickle" : "JSON");
    const auto loaded = pickle ? load_snapshot_from_bytes(as_pickle(snapshot), "history.pickle")
                               : load_snapshot_from_bytes(snapshot.dump(), "history.json");
    ASSERT_TRUE(loaded) << loaded.error().message();
    const Snapshot& snap = loaded.value();
    ASSERT_EQ(snap.blocks.size(), 3u);
    EXPECT_EQ(snap.blocks[0].requested_size, 1000u);
    EXPECT_EQ(top_frame(snap, snap.blocks[0].stack), "forward");
    EXPECT_EQ(snap.blocks[1].requested_size, 400u);
    EXPECT_EQ(top_frame(snap, snap.blocks[1].stack), "step");
    std::vector<std::string> frames;
    for (std::size_t i = 0; i < snap.frames.size(); ++i) frames.emplace_back(snap.str(snap.frames.get(FrameId(i)).name));
    EXPECT_EQ(frames, (std::vector<std::string>{"forward", "step"})) << "no frame of a history entry the block does not use";
    EXPECT_EQ(compute_figures(snap).requested_bytes, 1400u);
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
