// Following a trace while it is written: each poll appends what the file gained, ranges
// close when their ends arrive, and the result equals loading the finished file at once.
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace cudascope;
using namespace cudascope::trace_testing;

TEST(TraceFollowerTest, PollsAppendWhatTheFileGainedAndEndEqualToALoadOfTheWholeFile) {
  const std::string text = read_text(data_path("trace_golden.json"));
  const std::string path = temp_path("followed.json");
  std::filesystem::remove(path);
  analysis::TraceFollower follower(path);
  EXPECT_EQ(follower.poll(), 0) << "no file yet";
  std::ofstream out(path, std::ios::binary);
  std::size_t polls_with_events = 0;
  // Written in pieces that end anywhere: inside the header, inside events, between them.
  for (std::size_t at = 0; at < text.size(); at += 61) {
    out << text.substr(at, 61);
    out.flush();
    const long long added = follower.poll();
    ASSERT_GE(added, 0) << follower.error();
    polls_with_events += added > 0;
    EXPECT_FALSE(follower.finished() && at + 61 < text.size());
  }
  out.close();
  EXPECT_EQ(follower.poll(), 0);
  EXPECT_TRUE(follower.finished());
  EXPECT_GT(polls_with_events, 5u) << "the model grew poll after poll";
  const auto whole = analysis::load_trace(path);
  ASSERT_TRUE(whole.ok()) << whole.error;
  const analysis::TraceModel& followed = follower.model();
  ASSERT_EQ(followed.event_count(), whole.model->event_count());
  for (std::size_t i = 0; i < followed.event_count(); ++i) {
    EXPECT_EQ(followed.event(i).dur_ns, whole.model->event(i).dur_ns) << "event " << i;
    EXPECT_EQ(followed.event(i).depth, whole.model->event(i).depth) << "event " << i;
  }
  EXPECT_EQ(analysis::format_stats(analysis::compute_stats(followed), analysis::StatsFormat::json),
            analysis::format_stats(analysis::compute_stats(*whole.model), analysis::StatsFormat::json));
  EXPECT_EQ(followed.flows().size(), whole.model->flows().size());
  ASSERT_EQ(followed.tracks().size(), whole.model->tracks().size());
  for (std::size_t t = 0; t < followed.tracks().size(); ++t) EXPECT_EQ(followed.tracks()[t].events, whole.model->tracks()[t].events);
  std::filesystem::remove(path);
}

TEST(TraceFollowerTest, AGzipFileIsRefusedWithAReason) {
  const std::string path = temp_path("followed.json.gz");
  write_text(path, gzip("{\"traceEvents\":[]}"));
  analysis::TraceFollower follower(path);
  EXPECT_EQ(follower.poll(), -1);
  EXPECT_NE(follower.error().find("gzip"), std::string::npos) << follower.error();
  std::filesystem::remove(path);
}
