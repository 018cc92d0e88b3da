// The sim's replays of PyTorch's allocation sequences depend on the segment addresses
// recorded beside each one (NAME.segments.json.gz: what cudaMalloc returned, in order),
// which break best-fit ties between equal-size blocks as the GPU's addresses did. These
// tests make that dependency visible instead of silent:
//  - every recorded address is used, one per cudaMalloc of the replay, none left over, and
//    with them the replay gives PyTorch's memory_stats exactly;
//  - without them, how many keys differ is measured and reported (a figure, not a gate:
//    ReplayWithoutAddresses.* prints "differing keys: N of 122" and records the property
//    differing_keys); only the keys that no address can change are asserted equal.
// Registered with CUDASCOPE_BACKEND=sim: the recorded addresses are the sim's concern.
// (The sim's memory is set below: the test registration carries one variable only.)
#include "allocator_test_util.h"

#include <cudascope/util/byte_source.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

namespace cudascope::testing {
namespace {

// PyTorch's peaks reach 25 GB: room on the sim device, set before the runtime starts (unless
// the caller chose a size).
const bool sim_memory_set = setenv("CUDASCOPE_SIM_MEMORY", "128GiB", /*overwrite=*/0) == 0;

std::vector<std::string> recorded_sequences() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(CUDASCOPE_TEST_DATA_DIR)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".jsonl.gz";
    if (name.rfind("replay_", 0) == 0 && name.ends_with(suffix)) names.push_back(name.substr(0, name.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string gunzipped(const std::string& path) {
  std::string error;
  std::string text = util::read_file(path, std::uint64_t{1} << 30, error);
  EXPECT_EQ(error, "");
  return text;
}

// NAME.segments.json.gz: a JSON list of integers.
std::vector<std::uint64_t> recorded_addresses(const std::string& name) {
  const std::string text = gunzipped(data_path(name + ".segments.json.gz"));
  std::vector<std::uint64_t> out;
  std::size_t i = text.find_first_of("0123456789");
  while (i != std::string::npos) {
    const std::size_t end = text.find_first_not_of("0123456789", i);
    out.push_back(std::stoull(text.substr(i, end - i)));
    i = end == std::string::npos ? end : text.find_first_of("0123456789", end);
  }
  return out;
}

std::vector<std::string> differing_keys(const std::map<std::string, std::int64_t>& ours,
                                        const std::map<std::string, std::int64_t>& torch) {
  std::vector<std::string> out;
  for (const auto& [key, value] : torch) {
    const auto it = ours.find(key);
    if (it == ours.end() || it->second != value) out.push_back(key);
  }
  return out;
}

class ReplayAddresses : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    CUDASCOPE_REQUIRE_SIM_BACKEND();
    ASSERT_GE(cuda::mem_get_info(0).second, std::size_t{32} << 30)
        << "PyTorch's peaks reach 25 GB: CUDASCOPE_SIM_MEMORY must be at least 32GiB";
  }
};

TEST_P(ReplayAddresses, EveryRecordedAddressIsUsedOncePerSegmentAndStatsMatch) {
  const std::string name = GetParam();
  const auto torch = read_stats_json(data_path(name + ".stats.json.gz"));
  const auto addresses = recorded_addresses(name);
  const bool expandable = gunzipped(data_path(name + ".jsonl.gz")).find("expandable_segments:True") != std::string::npos;
  const auto ours = cuda::memory::replay_file(data_path(name + ".jsonl.gz"));
  if (expandable) {
    // Expandable segments map pages into one reserved range: no cudaMalloc, no addresses.
    EXPECT_TRUE(addresses.empty()) << name << ": an expandable-segments recording holds no segment addresses";
  } else {
    // The replay draws one address per cudaMalloc (num_device_alloc counts them; no fixture
    // resets the counters): as many segments as addresses means none unused, none missing.
    EXPECT_EQ(static_cast<std::int64_t>(addresses.size()), torch.at("num_device_alloc"))
        << name << ": the recording's own segment count";
    EXPECT_EQ(static_cast<std::int64_t>(addresses.size()), ours.at("num_device_alloc"))
        << name << ": recorded addresses left unused (fewer cudaMallocs) or missing (more)";
  }
  EXPECT_EQ(differing_keys(ours, torch), std::vector<std::string>{}) << name;
  EXPECT_EQ(ours.size(), torch.size());
}

TEST_P(ReplayAddresses, ReplayWithoutAddressesIsMeasuredNotHidden) {
  const std::string name = GetParam();
  const auto torch = read_stats_json(data_path(name + ".stats.json.gz"));
  const std::string ops = gunzipped(data_path(name + ".jsonl.gz"));
  std::istringstream in(ops);
  const auto ours = cuda::memory::replay(in, name);  // replay() of a stream loads no addresses
  const auto keys = differing_keys(ours, torch);
  std::string list;
  for (const auto& k : keys) list += " " + k;
  std::printf("%s without recorded addresses: differing keys: %zu of %zu%s\n", name.c_str(), keys.size(), torch.size(),
              list.c_str());
  RecordProperty("differing_keys", static_cast<int>(keys.size()));
  if (recorded_addresses(name).empty()) {
    // Nothing recorded (expandable segments): this is the same replay as with the addresses.
    EXPECT_EQ(keys, std::vector<std::string>{}) << name;
  }
  // What no address can change: how many allocations the sequence made and the bytes it
  // asked for, as long as nothing ran out of memory (only the memory-limited recording can).
  if (torch.at("num_ooms") == 0 && ours.at("num_ooms") == 0) {
    for (const std::string stat : {"allocation", "requested_bytes"}) {
      for (const std::string pool : {"all", "small_pool", "large_pool"}) {
        for (const std::string field : {"current", "peak", "allocated", "freed"}) {
          const std::string key = stat + "." + pool + "." + field;
          EXPECT_EQ(ours.at(key), torch.at(key)) << name << ": " << key << " does not depend on addresses";
        }
      }
    }
  }
  EXPECT_EQ(ours.size(), torch.size());
}

INSTANTIATE_TEST_SUITE_P(Recorded, ReplayAddresses, ::testing::ValuesIn(recorded_sequences()),
                         [](const auto& info) { return info.param.substr(7); });

}  // namespace
}  // namespace cudascope::testing
