// Fidelity: replaying allocation sequences recorded with PyTorch must give PyTorch's
// memory_stats, every key (tests/data/replay_*.jsonl.gz and their .stats.json.gz, made by
// tests/data/make_replay.py on a GPU).
#include "allocator_test_util.h"

#include <filesystem>

namespace cudascope::testing {
namespace {

std::vector<std::string> recorded_sequences() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(CUDASCOPE_TEST_DATA_DIR)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("replay_", 0) == 0 && name.size() > 9 && name.substr(name.size() - 9) == ".jsonl.gz") {
      names.push_back(name.substr(0, name.size() - 9));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class ReplayTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReplayTest, GivesPyTorchsMemoryStatsExactly) {
  const auto expected = read_stats_json(data_path(GetParam() + ".stats.json.gz"));
  ASSERT_EQ(expected.size(), 122u);
  const auto ours = cuda::memory::replay_file(data_path(GetParam() + ".jsonl.gz"));
  for (const auto& [key, value] : expected) {
    ASSERT_TRUE(ours.count(key)) << key;
    EXPECT_EQ(ours.at(key), value) << key;
  }
  EXPECT_EQ(ours.size(), expected.size());
  // The replay leaves a fresh allocator behind.
  EXPECT_EQ(cuda::memory_reserved(0), 0);
  EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);
}

INSTANTIATE_TEST_SUITE_P(Recorded, ReplayTest, ::testing::ValuesIn(recorded_sequences()),
                         [](const auto& info) { return info.param.substr(7); });

TEST(ReplayFileTest, BadLinesNameTheFileAndLine) {
  std::istringstream in("{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n{\"op\": \"explode\"}\n");
  EXPECT_THAT([&] { cuda::memory::replay(in, "seq.jsonl"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("seq.jsonl:3")));
  EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);  // cleaned up after the error
  std::istringstream bad_conf("{\"conf\": \"max_split_size_mb:x\"}\n");
  EXPECT_THAT([&] { cuda::memory::replay(bad_conf, "seq.jsonl"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("max_split_size_mb")));
}

}  // namespace
}  // namespace cudascope::testing
