// `cudascope whatif` end to end on real PyTorch snapshots, checked against what Python's
// pickle and json compute from the same files (tests/cli/whatif_expect.py): replayed under the
// snapshot's own settings, the prediction must equal the peak PyTorch reserved and its
// cudaMalloc count; a trace cut as a wrapped ring buffer leaves it is named with the blocks it
// must assume; bad settings and files fail before any replay with their exit codes.
#include "run_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace cudascope::testing {
namespace {

using ::testing::HasSubstr;

std::string data(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }
std::string expect_script() { return std::string(CUDASCOPE_TEST_SOURCE_DIR) + "/whatif_expect.py"; }

nlohmann::json whatif_json(const std::string& arguments) {
  const CliResult r = run_cli("", "whatif --json " + arguments + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

nlohmann::json python(const std::string& arguments) {
  const CliResult r = run_shell("python3 '" + expect_script() + "' " + arguments + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << "python3 is needed to run the tests: " << r.output;
  return nlohmann::json::parse(r.output, nullptr, false);
}

class WhatifOnSnapshot : public ::testing::TestWithParam<const char*> {};

TEST_P(WhatifOnSnapshot, PredictsThePeakPyTorchReservedUnderItsOwnSettings) {
  const std::string snapshot = data(GetParam());
  const nlohmann::json expected = python("'" + snapshot + "'")["0"];
  const nlohmann::json r = whatif_json("'" + snapshot + "' --conf expandable_segments:True --conf max_split_size_mb:64");
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(r["history_complete"].get<bool>());
  ASSERT_EQ(r["settings"].size(), 3u) << "the snapshot's own settings first, then each --conf";
  const nlohmann::json& own = r["settings"][0];
  EXPECT_TRUE(own["baseline"].get<bool>());
  EXPECT_EQ(own["peak_reserved_bytes"], expected["peak_reserved_bytes"]);
  EXPECT_EQ(own["cuda_malloc_count"], expected["cuda_malloc_count"]);
  for (const auto& setting : r["settings"]) {
    SCOPED_TRACE(setting["conf"].get<std::string>());
    EXPECT_GE(setting["peak_reserved_bytes"].get<uint64_t>(), setting["peak_allocated_bytes"].get<uint64_t>());
    EXPECT_GE(setting["fragmentation_at_peak"].get<double>(), 0.0);
    EXPECT_LT(setting["fragmentation_at_peak"].get<double>(), 1.0);
    EXPECT_FALSE(setting["oom"].get<bool>());
  }
  // Python's figures again: this run's peak does not move with max_split_size_mb:64, so a
  // difference here would come from the replay, not from the setting.
  EXPECT_EQ(r["settings"][2]["peak_reserved_bytes"], own["peak_reserved_bytes"]);
}

// The same PyTorch run as a pickle and as the JSON it was converted to.
INSTANTIATE_TEST_SUITE_P(RealSnapshots, WhatifOnSnapshot,
                         ::testing::Values("snap_transformer_p4.pickle.gz", "snap_transformer.json.gz"));

TEST(WhatifCliTest, AWrappedHistoryIsNamedWithTheBlocksItAssumes) {
  const std::string cut = ::testing::TempDir() + "whatif_cut.pickle.gz";
  const nlohmann::json dropped = python("'" + data("snap_transformer_p4.pickle.gz") + "' --drop 4000 '" + cut + "'");
  const nlohmann::json r = whatif_json("'" + cut + "'");
  ASSERT_TRUE(r.is_object());
  EXPECT_FALSE(r["history_complete"].get<bool>());
  EXPECT_EQ(r["live_at_start"], dropped["live_at_start"]);
  EXPECT_EQ(r["live_at_start_bytes"], dropped["live_at_start_bytes"]);
  const CliResult text = run_cli("", "whatif '" + cut + "' 2>&1");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("assumed allocated first"));
  std::remove(cut.c_str());
}

TEST(WhatifCliTest, AMemoryLimitBelowThePeakRunsOutAndSaysWhere) {
  const nlohmann::json r = whatif_json("'" + data("snap_transformer_p4.pickle.gz") + "' --memory-limit 200MiB");
  ASSERT_TRUE(r.is_object());
  const nlohmann::json& own = r["settings"][0];
  EXPECT_TRUE(own["oom"].get<bool>());
  EXPECT_GT(own["oom_count"].get<uint64_t>(), 0u);
  EXPECT_TRUE(own["first_oom_entry"].is_number());
  EXPECT_LE(own["peak_reserved_bytes"].get<uint64_t>(), 200ull << 20);
  const nlohmann::json roomy = whatif_json("'" + data("snap_transformer_p4.pickle.gz") + "' --memory-limit 1GiB");
  EXPECT_FALSE(roomy["settings"][0]["oom"].get<bool>());
}

TEST(WhatifCliTest, ABadSettingIsNamedBeforeAnyReplay) {
  const CliResult r =
      run_cli("", "whatif '" + data("snap_transformer_p4.pickle.gz") + "' --conf max_split_size_mb:64 --conf bogus_key:1 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bogus_key"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("peak reserved")));
}

// The cudaMallocAsync backend's memory is the driver's pool: refused, not shown as the native
// allocator's figures under its name.
TEST(WhatifCliTest, ABackendItDoesNotModelIsRefused) {
  const CliResult r =
      run_cli("", "whatif '" + data("snap_transformer_p4.pickle.gz") + "' --conf backend:cudaMallocAsync 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("'backend:cudaMallocAsync': whatif replays the caching allocator"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("peak reserved"))) << "refused before any replay";
}

// A setting given twice, or the snapshot's own given again, is replayed and shown once.
TEST(WhatifCliTest, ASettingGivenTwiceIsShownOnce) {
  const CliResult r = run_cli("", "whatif --json '" + data("snap_transformer_p4.pickle.gz") +
                                      "' --conf expandable_segments:True --conf expandable_segments:True 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = nlohmann::json::parse(r.output)["settings"];
  ASSERT_EQ(rows.size(), 2U) << r.output.substr(0, 400);
  EXPECT_EQ(rows[1]["conf"], "expandable_segments:True");
  const CliResult note = run_cli("", "whatif '" + data("snap_transformer_p4.pickle.gz") +
                                         "' --conf expandable_segments:True --conf expandable_segments:True 2>&1");
  EXPECT_THAT(note.output, HasSubstr("--conf 'expandable_segments:True' is given twice; shown once"));
}

TEST(WhatifCliTest, AMissingOrBrokenSnapshotFailsWithItsName) {
  const CliResult missing = run_cli("", "whatif /nonexistent/snap.pickle 2>&1");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("/nonexistent/snap.pickle"));
  const CliResult broken = run_cli("", "whatif '" + data("snap_bad_truncated.pickle") + "' 2>&1");
  EXPECT_EQ(broken.exit_code, 1) << broken.output;
  EXPECT_THAT(broken.output, HasSubstr("snap_bad_truncated.pickle"));
}

}  // namespace
}  // namespace cudascope::testing
