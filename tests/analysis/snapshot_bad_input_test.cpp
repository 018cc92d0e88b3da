// Malformed snapshots: each must fail with a message naming the file, the byte offset
// and what was expected — the offsets and phrases come from the Python script that
// crafted the inputs (tests/data/snap_bad.expect.json).
#include "snapshot_test_support.h"

#include <gmock/gmock.h>

namespace cudascope::analysis {
namespace {

using testing::data_path;

class BadInput : public ::testing::TestWithParam<int> {};

TEST(SnapshotBadInputTest, EachCraftedInputFailsWhereAndHowExpected) {
  const auto cases = testing::expected_stats("snap_bad.expect.json");
  ASSERT_GE(cases.size(), 8u);
  for (const auto& c : cases) {
    const std::string file = data_path(c["file"].get<std::string>());
    SCOPED_TRACE(file);
    auto result = load_snapshot(file);
    ASSERT_FALSE(result) << "loaded a malformed snapshot";
    const LoadError& e = result.error();
    EXPECT_EQ(e.file, file);
    EXPECT_GE(e.offset, c["offset_min"].get<uint64_t>()) << e.message();
    EXPECT_LE(e.offset, c["offset_max"].get<uint64_t>()) << e.message();
    EXPECT_NE(e.expected.find(c["contains"].get<std::string>()), std::string::npos) << e.message();
    EXPECT_EQ(e.message().rfind(file + ": byte " + std::to_string(e.offset) + ": ", 0), 0u) << e.message();
  }
}

TEST(SnapshotBadInputTest, RejectsCodeExecutionOpcodesBeforeAnythingRuns) {
  auto r = load_snapshot(data_path("snap_bad_global.pickle"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().expected.find("never imports or calls anything"), std::string::npos);
  // REDUCE alone (after a valid start) is refused too.
  const std::string reduce = std::string("\x80\x02}q\x00)R.", 8);
  auto r2 = load_snapshot_from_bytes(reduce, "reduce.pickle");
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().expected.find("REDUCE"), std::string::npos);
  EXPECT_EQ(r2.error().offset, 6u);
}

TEST(SnapshotBadInputTest, RejectsProtocolsOutsideTwoToFive) {
  const std::string p1 = std::string("\x80\x01}.", 4);
  auto r = load_snapshot_from_bytes(p1, "p1.pickle");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().expected.find("protocol 2 to 5"), std::string::npos);
}

TEST(SnapshotBadInputTest, CorruptGzipIsReported) {
  std::string gz = testing::read_file(data_path("snap_transformer_p4.pickle.gz"));
  gz.resize(gz.size() / 2);
  auto r = load_snapshot_from_bytes(gz, "half.pickle.gz");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().expected.find("gzip data ends early"), std::string::npos) << r.error().message();
  gz = testing::read_file(data_path("snap_transformer_p4.pickle.gz"));
  for (size_t i = 100; i < 400; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  auto r2 = load_snapshot_from_bytes(gz, "garbled.pickle.gz");
  ASSERT_FALSE(r2);
  EXPECT_FALSE(r2.error().expected.empty());
}

TEST(SnapshotBadInputTest, MemoIndexGapsAreRefused) {
  // LONG_BINPUT 1000000 on an empty memo would make a naive reader allocate a huge memo.
  const std::string put = std::string("\x80\x04}r\x40\x42\x0f\x00.", 9);
  auto r = load_snapshot_from_bytes(put, "memo.pickle");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().expected.find("memo index"), std::string::npos);
  EXPECT_EQ(r.error().offset, 3u);
}

// Sizes and addresses that no allocator can produce are reported, naming the segment, block
// or entry, instead of being summed into nonsense (a negative total_size read as 16 EiB).
std::string json_snapshot(const std::string& total_size, const std::string& blocks, const std::string& trace_size = "512") {
  return R"({"segments":[{"device":0,"address":1048576,"total_size":)" + total_size +
         R"(,"stream":0,"segment_type":"small","blocks":[)" + blocks +
         R"(]}],"device_traces":[[{"action":"alloc","addr":1048576,"size":)" + trace_size +
         R"(,"stream":0,"frames":[]}]]})";
}

std::string load_problem(const std::string& text) {
  auto r = load_snapshot_from_bytes(text, "crafted.json");
  return r ? std::string() : r.error().expected;
}

TEST(SnapshotBadInputTest, ImpossibleSizesAndBlockLayoutsAreNamed) {
  const std::string block_a = R"({"address":1048576,"size":1048576,"requested_size":1000,"state":"active_allocated"})";
  const std::string block_b = R"({"address":2097152,"size":1048576,"requested_size":0,"state":"inactive"})";
  EXPECT_EQ(load_problem(json_snapshot("2097152", block_a + "," + block_b)), "") << "a segment its blocks tile";
  EXPECT_THAT(load_problem(json_snapshot("-2097152", block_a)),
              ::testing::HasSubstr("segment 0 (device 0, address 1048576): total_size is negative (-2097152)"));
  const std::string overlapping = R"({"address":1572864,"size":1048576,"requested_size":0,"state":"inactive"})";
  EXPECT_THAT(load_problem(json_snapshot("2097152", block_a + "," + overlapping)),
              ::testing::HasSubstr("block 1 at 1572864 overlaps the block before it"));
  const std::string past_end = R"({"address":2097152,"size":4194304,"requested_size":0,"state":"inactive"})";
  EXPECT_THAT(load_problem(json_snapshot("2097152", block_a + "," + past_end)),
              ::testing::HasSubstr("block 1 [2097152, 6291456) reaches past the segment's end 3145728"));
  const std::string before_start = R"({"address":0,"size":1048576,"requested_size":0,"state":"inactive"})";
  EXPECT_THAT(load_problem(json_snapshot("2097152", before_start)), ::testing::HasSubstr("block 0 at 0 starts before its segment"));
  const std::string negative_block = R"({"address":1048576,"size":-512,"requested_size":0,"state":"inactive"})";
  EXPECT_THAT(load_problem(json_snapshot("2097152", negative_block)), ::testing::HasSubstr("block 0: size is negative (-512)"));
  EXPECT_THAT(load_problem(json_snapshot("2097152", block_a, "-512")),
              ::testing::HasSubstr("trace entry 0: size is negative (-512)"));
}

}  // namespace
}  // namespace cudascope::analysis
