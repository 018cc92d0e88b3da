// `cudascope run -o PATTERN`: the directives, their errors, the pid suffix, and the lock that
// keeps two processes from writing one file (exporters/trace_path.h).
#include <cudascope/exporters/trace_path.h>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

using namespace cudascope::exporters;

namespace {

TracePathFields fields(const std::string& rank = "3") {
  TracePathFields f;
  f.rank = rank;
  f.pid = "4242";
  f.host = "node7";
  return f;
}

TEST(TracePathTest, DirectivesExpandToRankPidHostAndPercent) {
  EXPECT_EQ(expand_trace_path("out/trace_%r.json.gz", fields()), "out/trace_3.json.gz");
  EXPECT_EQ(expand_trace_path("%h-%p-%r-100%%.json", fields()), "node7-4242-3-100%.json");
  EXPECT_EQ(expand_trace_path("plain.json", fields()), "plain.json");
  EXPECT_TRUE(is_trace_path_pattern("t_%r.json"));
  EXPECT_TRUE(is_trace_path_pattern("t_%h.json"));
  EXPECT_FALSE(is_trace_path_pattern("t_100%%.json")) << "%% names no process";
  EXPECT_FALSE(is_trace_path_pattern("t.json"));
}

TEST(TracePathTest, RankIsNorankWithoutRankInTheEnvironment) {
  unsetenv("RANK");
  EXPECT_EQ(TracePathFields::of_this_process().rank, "norank");
  setenv("RANK", "12", 1);
  EXPECT_EQ(TracePathFields::of_this_process().rank, "12");
  unsetenv("RANK");
  EXPECT_EQ(TracePathFields::of_this_process().pid, std::to_string(getpid()));
  EXPECT_FALSE(TracePathFields::of_this_process().host.empty());
}

TEST(TracePathTest, UnknownDirectivesAndALonePercentAreNamed) {
  EXPECT_EQ(trace_path_pattern_problem("trace_%r_%p_%h_%%.json"), "");
  const std::string unknown = trace_path_pattern_problem("trace_%x.json");
  EXPECT_NE(unknown.find("unknown directive '%x' at character 7 of 'trace_%x.json'"), std::string::npos) << unknown;
  EXPECT_NE(trace_path_pattern_problem("trace.json%").find("a lone '%'"), std::string::npos);
}

TEST(TracePathTest, PidSuffixGoesBeforeTheJsonExtension) {
  EXPECT_EQ(with_pid_suffix("/d/t.json.gz", "9"), "/d/t.9.json.gz");
  EXPECT_EQ(with_pid_suffix("/d/t.json", "9"), "/d/t.9.json");
  EXPECT_EQ(with_pid_suffix("/d.json/trace", "9"), "/d.json/trace.9") << "a directory's .json is not the file's";
}

// The process `cudascope run` started owns a fixed name; any other writes name.<pid>.
TEST(TracePathTest, FixedNameBelongsToTheOwnerProcess) {
  const auto dir = std::filesystem::temp_directory_path() / ("trace_path_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string fixed = (dir / "t.json").string();
  EXPECT_EQ(choose_trace_path(fixed, "4242", fields()), fixed);
  EXPECT_EQ(choose_trace_path(fixed, "1", fields()), (dir / "t.4242.json").string());
  std::filesystem::remove_all(dir);
}

// A name another live process holds is not written again: this one gets name.<pid>.
TEST(TracePathTest, ANameHeldByAnotherProcessGetsThePidSuffix) {
  const auto dir = std::filesystem::temp_directory_path() / ("trace_lock_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string pattern = (dir / "t_%r.json").string();
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    TracePathFields f = fields();
    f.pid = std::to_string(getpid());
    const bool plain = choose_trace_path(pattern, "", f) == (dir / "t_3.json").string();
    char byte = plain ? '1' : '0';
    [[maybe_unused]] auto n = write(ready[1], &byte, 1);
    n = read(release[0], &byte, 1);  // hold the lock until the parent has tried
    _exit(0);
  }
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  EXPECT_EQ(byte, '1') << "the first process takes the plain name";
  EXPECT_EQ(choose_trace_path(pattern, "", fields()), (dir / "t_3.4242.json").string());
  ASSERT_EQ(write(release[1], &byte, 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
