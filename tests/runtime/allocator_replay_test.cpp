// Fidelity: replaying allocation sequences recorded with PyTorch must give PyTorch's
// memory_stats, every key (tests/data/replay_*.jsonl.gz and their .stats.json.gz, made by
// tests/data/make_replay.py on a GPU).
#include "allocator_test_util.h"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

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

// On a GPU each replay runs in a fresh process: cudaMalloc's addresses (which break
// best-fit ties) depend on what the process allocated before, as in PyTorch's recording.
// A third argument names the recording's addresses, to break ties by instead.
int replay_child(int argc, char** argv) {
  if (argc < 3) return 2;
  const auto stats = argc > 3 ? cuda::memory::replay_file_with_addresses(argv[2], std::string(argv[3]))
                              : cuda::memory::replay_file(argv[2]);
  for (const auto& [key, value] : stats) std::printf("%s %lld\n", key.c_str(), static_cast<long long>(value));
  return 0;
}
const ChildModeRegistrar replay_mode("--replay-child", replay_child);

std::map<std::string, std::int64_t> replay_stats(const std::vector<std::string>& args,
                                                 const std::vector<std::string>& extra_env = {}) {
  const auto r = run_self(args, extra_env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::int64_t> out;
  std::istringstream in(r.output);
  std::string key;
  long long value = 0;
  while (in >> key >> value) out[key] = value;
  return out;
}

// What a replaying process can reserve on device 0, read from NVML so that this process makes
// no context of its own (it would move the driver's placement for the child): free memory less
// a margin for the child's context.
std::int64_t free_for_a_replay() {
  const cuda::DeviceTelemetry device = cuda::device_telemetry(0);
  if (device.memory_total_bytes == 0) return std::numeric_limits<std::int64_t>::max();  // NVML could not say
  constexpr std::int64_t kContextMargin = std::int64_t{1} << 30;
  return static_cast<std::int64_t>(device.memory_total_bytes) - static_cast<std::int64_t>(device.memory_used_bytes) -
         kContextMargin;
}

std::vector<std::string> differing_keys(const std::map<std::string, std::int64_t>& ours,
                                        const std::map<std::string, std::int64_t>& expected) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : expected) {
    const auto it = ours.find(key);
    if (it == ours.end() || it->second != value) keys.push_back(key);
  }
  return keys;
}

TEST_P(ReplayTest, GivesPyTorchsMemoryStatsExactly) {
  const auto expected = read_stats_json(data_path(GetParam() + ".stats.json.gz"));
  ASSERT_EQ(expected.size(), 122u);
  const std::string sequence = data_path(GetParam() + ".jsonl.gz");
  bool on_device = on_cuda_backend();
  if (on_device && expected.at("reserved_bytes.all.peak") > free_for_a_replay()) {
    // The recording's GPU had more memory than this one has free: the same replay on the
    // simulated device (as large as the recording's) still checks every figure.
    std::printf("%s: reserved %lld B at its peak, more than this device has free; replayed on the sim device\n",
                GetParam().c_str(), static_cast<long long>(expected.at("reserved_bytes.all.peak")));
    RecordProperty("backend", "sim: the device has too little free memory");
    on_device = false;
  }
  auto ours = on_device ? replay_stats({"--replay-child", sequence})
                        : on_cuda_backend() ? replay_stats({"--replay-child", sequence}, {"CUDASCOPE_BACKEND=sim"})
                                            : cuda::memory::replay_file(sequence);
  const std::string addresses = data_path(GetParam() + ".segments.json.gz");
  const std::size_t keys_off = differing_keys(ours, expected).size();
  if (on_device && keys_off > 0 && std::filesystem::exists(addresses)) {
    // The driver placed some segment elsewhere than on the recording GPU, so some best-fit
    // tie broke the other way: a driver's placement differs between processes, even between
    // two PyTorch processes replaying one sequence on one machine. Given the recording's
    // order of addresses, the allocator must then make PyTorch's choices exactly.
    std::printf("%s: the driver's placement differs from the recording's (%zu keys off); replaying "
                "with the recording's addresses as the order of ties\n",
                GetParam().c_str(), keys_off);
    RecordProperty("placement", "recording's addresses");
    ours = replay_stats({"--replay-child", sequence, addresses});
  }
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

// A second alloc of an id still allocated would lose the first block to the sequence: an
// error naming the line. An id whose alloc failed, or that was freed, may come again.
TEST(ReplayFileTest, AnIdAllocatedTwiceWithoutAFreeIsAnError) {
  std::istringstream twice("{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 7, \"size\": 100}\n"
                           "{\"op\": \"alloc\", \"id\": 7, \"size\": 200}\n");
  EXPECT_THAT([&] { cuda::memory::replay(twice, "seq.jsonl"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::AllOf(::testing::HasSubstr("seq.jsonl:3"),
                                                                      ::testing::HasSubstr("id 7 is allocated already"))));
  EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);
  std::istringstream again("{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 7, \"size\": 100}\n"
                           "{\"op\": \"free\", \"id\": 7}\n{\"op\": \"alloc\", \"id\": 7, \"size\": 200}\n");
  EXPECT_EQ(cuda::memory::replay(again, "seq.jsonl").at("allocation.all.allocated"), 2);
}

// What no recording holds is an error naming the line: an op where the header belongs, a
// negative memory limit (-1 would read as none), a negative id (it would wrap to 2^64 - 1).
// A limit of 0 is a recording's (a memory fraction of 0): every allocation fails.
TEST(ReplayFileTest, AMissingHeaderANonPositiveLimitAndANegativeIdAreErrors) {
  const auto fails_with = [](const std::string& text, const std::string& message) {
    std::istringstream in(text);
    EXPECT_THAT([&] { cuda::memory::replay(in, "seq.jsonl"); },
                ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr(message)))
        << text;
    EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);
  };
  fails_with("{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n", "seq.jsonl:1: an op where the header belongs");
  fails_with("{\"conf\": \"\", \"memory_limit\": -1}\n", "seq.jsonl:1: \"memory_limit\" is -1");
  std::istringstream nothing("{\"conf\": \"\", \"memory_limit\": 0}\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n"
                             "{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n");
  const auto none = cuda::memory::replay(nothing, "seq.jsonl");
  EXPECT_EQ(none.at("num_ooms"), 2) << "the failed alloc left id 1 free for the next";
  EXPECT_EQ(none.at("allocation.all.allocated"), 0);
  fails_with("{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": -1, \"size\": 100}\n", "seq.jsonl:2: \"id\" is negative: -1");
  fails_with("{\"conf\": \"\"}\n{\"op\": \"free\", \"id\": -7}\n", "seq.jsonl:2: \"id\" is negative: -7");
}

TEST(ReplayFileTest, AStreamCountOutsideOneTo65IsAnErrorBeforeAnyOp) {
  for (const char* count : {"0", "66", "-3"}) {
    std::istringstream in(std::string("{\"conf\": \"\", \"streams\": ") + count +
                          "}\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n");
    EXPECT_THAT([&] { cuda::memory::replay(in, "seq.jsonl"); },
                ::testing::ThrowsMessage<cuda::Error>(::testing::AllOf(
                    ::testing::HasSubstr("seq.jsonl:1"), ::testing::HasSubstr(std::string("\"streams\" is ") + count))))
        << count;
    EXPECT_EQ(cuda::memory_stats(0).at("allocation.all.allocated"), 0);
  }
  std::istringstream three("{\"conf\": \"\", \"streams\": 3}\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100, \"stream\": 2}\n");
  EXPECT_EQ(cuda::memory::replay(three, "seq.jsonl").at("allocation.all.allocated"), 1);
}

TEST(ReplayFileTest, OverlongLineIsAnErrorAfterOneMiB) {
  std::string text = "{\"conf\": \"\"}\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\n";
  text += std::string((1 << 20) + 10, ' ');
  std::istringstream in(text);
  EXPECT_THAT([&] { cuda::memory::replay(in, "seq.jsonl"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("seq.jsonl:3: a line longer than 1 MiB")));
  EXPECT_EQ(cuda::detail::alloc::live_allocations(0), 0u);
}

TEST(ReplayFileTest, LastLineNeedsNoNewlineAndCrlfIsAccepted) {
  std::istringstream in("{\"conf\": \"\"}\r\n{\"op\": \"alloc\", \"id\": 1, \"size\": 100}\r\n"
                        "{\"op\": \"alloc\", \"id\": 2, \"size\": 700}");
  const auto stats = cuda::memory::replay(in, "seq.jsonl");
  EXPECT_EQ(stats.at("allocation.all.allocated"), 2);
  EXPECT_EQ(stats.at("allocated_bytes.all.current"), 512 + 1024);
}

}  // namespace
}  // namespace cudascope::testing
