#include <cudascope/profiler/activities.h>

#include <gtest/gtest.h>

#include <stdexcept>

using cudascope::profiler::Activity;
using cudascope::profiler::ActivitySet;

TEST(ActivitySetTest, ParsesListsWithSpacesAndRoundTrips) {
  const ActivitySet set = ActivitySet::parse("kernel, memcpy ,nvtx");
  EXPECT_TRUE(set.contains(Activity::kKernel));
  EXPECT_TRUE(set.contains(Activity::kMemcpy));
  EXPECT_TRUE(set.contains(Activity::kNvtx));
  EXPECT_FALSE(set.contains(Activity::kRuntime));
  EXPECT_EQ(set.to_string(), "kernel,memcpy,nvtx");
  EXPECT_EQ(ActivitySet::parse(set.to_string()), set);
}

TEST(ActivitySetTest, DefaultTracesLaunchCallsOnlyAndAllHasFullApiTracing) {
  EXPECT_FALSE(ActivitySet::defaults().contains(Activity::kDriver));
  EXPECT_FALSE(ActivitySet::defaults().contains(Activity::kRuntime));
  EXPECT_FALSE(ActivitySet::defaults().contains(Activity::kSync));
  EXPECT_TRUE(ActivitySet::defaults().contains(Activity::kLaunch));
  EXPECT_TRUE(ActivitySet::defaults().contains(Activity::kKernel));
  EXPECT_TRUE(ActivitySet::all().contains(Activity::kDriver));
  EXPECT_EQ(ActivitySet::parse("default,driver,runtime,sync"), ActivitySet::all());
}

TEST(ActivitySetTest, MetricsOnlyDefaultsLeaveOutLaunchCallsOnly) {
  const ActivitySet metrics_only = ActivitySet::metrics_only_defaults();
  EXPECT_FALSE(metrics_only.contains(Activity::kLaunch));
  EXPECT_FALSE(metrics_only.contains(Activity::kSync));
  EXPECT_EQ(ActivitySet(metrics_only).add(Activity::kLaunch), ActivitySet::defaults());
  EXPECT_EQ(ActivitySet::parse("default,sync", metrics_only), ActivitySet(metrics_only).add(Activity::kSync))
      << "'default' is the defaults it is given";
}

TEST(ActivitySetTest, UnknownNameIsRejectedNamingIt) {
  try {
    ActivitySet::parse("kernel,kernals");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'kernals'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("memcpy"), std::string::npos) << "lists the valid names: " << e.what();
  }
  EXPECT_THROW(ActivitySet::parse(" , "), std::invalid_argument);
}
