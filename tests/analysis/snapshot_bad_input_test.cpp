// Malformed snapshots: each must fail with a message naming the file, the byte offset
// and what was expected — the offsets and phrases come from the Python script that
// crafted the inputs (tests/data/snap_bad.expect.json).
#include "snapshot_test_support.h"

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

}  // namespace
}  // namespace cudascope::analysis
