// Following a trace while it is written: each poll appends what the file gained, ranges
// close when their ends arrive, and the result equals loading the finished file at once.
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <cudascope/util/output_file.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

// Writes the golden trace to `path` in pieces that end anywhere (inside the header, inside
// events, between them), polling after each, and checks the followed model equals a load
// of the finished file. `write` appends a piece and flushes it; `close` finishes the file.
void follow_while_written(const std::string& path, const std::function<void(std::string_view)>& write,
                          const std::function<void()>& close) {
  const std::string text = read_text(data_path("trace_golden.json"));
  analysis::TraceFollower follower(path);
  std::size_t polls_with_events = 0;
  for (std::size_t at = 0; at < text.size(); at += 61) {
    write(std::string_view(text).substr(at, 61));
    const long long added = follower.poll();
    ASSERT_GE(added, 0) << follower.error();
    polls_with_events += added > 0;
    EXPECT_FALSE(follower.finished() && at + 61 < text.size());
  }
  close();
  EXPECT_GE(follower.poll(), 0) << follower.error();
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
}

}  // namespace

TEST(TraceFollowerTest, PollsAppendWhatTheFileGainedAndEndEqualToALoadOfTheWholeFile) {
  const std::string path = temp_path("followed.json");
  std::filesystem::remove(path);
  {
    analysis::TraceFollower early(path);
    EXPECT_EQ(early.poll(), 0) << "no file yet";
  }
  std::ofstream out(path, std::ios::binary);
  follow_while_written(path, [&](std::string_view piece) { out << piece; out.flush(); }, [&] { out.close(); });
  std::filesystem::remove(path);
}

TEST(TraceFollowerTest, AGzipTraceIsFollowedFromWhereTheLastPollStopped) {
  // As `cudascope run -o trace.json.gz` writes it: gzip with a sync flush after each chunk.
  const std::string path = temp_path("followed.json.gz");
  std::filesystem::remove(path);
  util::OutputFile out(path);
  ASSERT_TRUE(out.gzip());
  follow_while_written(path, [&](std::string_view piece) { out.write(piece); out.flush(); }, [&] { out.close(); });
  std::filesystem::remove(path);
}

TEST(TraceFollowerTest, CorruptGzipDataIsAnErrorNamingTheCompressedByte) {
  const std::string path = temp_path("followed_bad.json.gz");
  std::string bytes = gzip("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}");
  for (std::size_t i = 12; i < bytes.size() - 8; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  write_text(path, bytes);
  analysis::TraceFollower follower(path);
  EXPECT_EQ(follower.poll(), -1);
  EXPECT_NE(follower.error().find("gzip data is corrupt near compressed byte"), std::string::npos) << follower.error();
  std::filesystem::remove(path);
}
