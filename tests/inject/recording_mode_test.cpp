// What a recorded process records when its environment names no activities: metrics without a
// trace leave out what only a trace reads; a list that is named is taken as it is.
#include "recording_mode.h"

#include <cudascope/util/env_value.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using cudascope::inject::activities_from_environment;
using cudascope::profiler::Activity;
using cudascope::profiler::ActivitySet;

namespace {

class RecordingModeTest : public ::testing::Test {
 protected:
  static constexpr const char* kVariables[] = {"CUDASCOPE_ACTIVITIES", "CUDASCOPE_METRICS", "CUDASCOPE_NO_TRACE",
                                               "CUDASCOPE_METRICS_LABEL_NVTX"};
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kVariables) unsetenv(name);
  }
  static void metrics_only() {
    setenv("CUDASCOPE_METRICS", "127.0.0.1:9400", 1);
    setenv("CUDASCOPE_NO_TRACE", "1", 1);
  }
};

TEST_F(RecordingModeTest, ATraceRecordsTheDefaults) {
  EXPECT_EQ(activities_from_environment(), ActivitySet::defaults());
  setenv("CUDASCOPE_METRICS", "127.0.0.1:9400", 1);  // metrics beside a trace: the trace needs them all
  EXPECT_EQ(activities_from_environment(), ActivitySet::defaults());
}

TEST_F(RecordingModeTest, MetricsWithoutATraceRecordNoSynchronisationsOrLaunchCalls) {
  metrics_only();
  EXPECT_EQ(activities_from_environment(), ActivitySet::metrics_only_defaults());
  setenv("CUDASCOPE_ACTIVITIES", "default", 1);  // what `cudascope run` passes when not told
  const ActivitySet taken = activities_from_environment();
  EXPECT_EQ(taken, ActivitySet::metrics_only_defaults());
  EXPECT_FALSE(taken.contains(Activity::kSync));
  EXPECT_TRUE(taken.contains(Activity::kKernel));
  EXPECT_TRUE(taken.contains(Activity::kMemcpy));
}

TEST_F(RecordingModeTest, NvtxLabelsKeepTheLaunchCalls) {
  metrics_only();
  setenv("CUDASCOPE_METRICS_LABEL_NVTX", "1", 1);
  EXPECT_EQ(activities_from_environment(), ActivitySet::defaults());
}

TEST_F(RecordingModeTest, DefaultInAListIsTheModesDefaults) {
  metrics_only();
  setenv("CUDASCOPE_ACTIVITIES", "default,sync", 1);  // host waits back, and nothing else
  EXPECT_EQ(activities_from_environment(), ActivitySet(ActivitySet::metrics_only_defaults()).add(Activity::kSync));
  unsetenv("CUDASCOPE_NO_TRACE");
  EXPECT_EQ(activities_from_environment(), ActivitySet(ActivitySet::defaults()).add(Activity::kSync));
}

TEST_F(RecordingModeTest, ANamedListIsTakenAsItIs) {
  metrics_only();
  setenv("CUDASCOPE_ACTIVITIES", "kernel", 1);
  EXPECT_EQ(activities_from_environment(), ActivitySet::parse("kernel"));
}

TEST_F(RecordingModeTest, AnUnknownActivityIsNamedWithItsVariable) {
  setenv("CUDASCOPE_ACTIVITIES", "kernel,warp", 1);
  try {
    activities_from_environment();
    FAIL() << "an unknown activity was taken";
  } catch (const cudascope::util::EnvError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDASCOPE_ACTIVITIES"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("warp"), std::string::npos) << e.what();
  }
}

}  // namespace
