// A process started with CUDASCOPE_OOM_SNAPSHOT records the allocator's history from its
// first allocation, so the snapshot written at out-of-memory shows what led there. Each
// test runs a child process, since the setting is read when the allocator starts.
#include "test_support.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

namespace cudascope::testing {
namespace {

constexpr std::size_t kMiB = 1 << 20;

// Allocates two blocks inside an NVTX range, frees the first, then asks for more than the
// device's limit. Prints the two addresses.
int allocate_until_oom(int, char**) {
  cuda::set_per_process_memory_limit(64 * kMiB, 0);
  void* freed = nullptr;
  void* kept = nullptr;
  {
    cuda::nvtx::Range step("step 3");
    freed = cuda::caching_allocator_alloc(1 * kMiB, 0);
    kept = cuda::caching_allocator_alloc(2 * kMiB, 0);
    cuda::caching_allocator_delete(freed);
  }
  std::printf("%zu %zu\n", reinterpret_cast<std::size_t>(freed), reinterpret_cast<std::size_t>(kept));
  try {
    cuda::caching_allocator_alloc(128 * kMiB, 0);
  } catch (const cuda::OutOfMemoryError&) {
    cuda::caching_allocator_delete(kept);
    return 0;
  }
  return 3;  // no out-of-memory: the test's premise failed
}
const ChildModeRegistrar oom_mode("--allocate-until-oom", allocate_until_oom);

struct OomRun {
  std::string snapshot;  // the JSON written at the out-of-memory
  std::string freed, kept;  // the two blocks' addresses, as the snapshot writes them
};

OomRun run_until_oom(const std::string& name, std::vector<std::string> env) {
  const std::string path = ::testing::TempDir() + name + ".json";
  std::remove(path.c_str());
  env.push_back("CUDASCOPE_OOM_SNAPSHOT=" + path);
  const ChildResult child = run_self({"--allocate-until-oom"}, env);
  EXPECT_EQ(child.exit_code, 0) << child.output;
  OomRun run;
  std::istringstream(child.output) >> run.freed >> run.kept;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no snapshot at " << path;
  run.snapshot.assign(std::istreambuf_iterator<char>(in), {});
  return run;
}

// Where each `needles` entry occurs in `text`, each searched after the one before; npos
// from the first one missing on.
std::vector<std::size_t> in_order(const std::string& text, const std::vector<std::string>& needles) {
  std::vector<std::size_t> at;
  std::size_t from = 0;
  for (const auto& needle : needles) {
    from = from == std::string::npos ? from : text.find(needle, from);
    at.push_back(from);
  }
  return at;
}

std::string entry(const char* action, const std::string& addr) {
  return std::string("{\"action\":\"") + action + "\",\"addr\":" + addr + ",";
}

TEST(OomHistoryTest, TheDefaultSnapshotCarriesTheActionsThatLedToTheOom) {
  const OomRun run = run_until_oom("oom_history_default", {});
  const auto at = in_order(run.snapshot, {entry("alloc", run.freed), entry("alloc", run.kept),
                                          entry("free_requested", run.freed), entry("free_completed", run.freed),
                                          "{\"action\":\"oom\""});
  for (std::size_t i = 0; i < at.size(); ++i) EXPECT_NE(at[i], std::string::npos) << "trace entry " << i;
  // Each action keeps the NVTX range it happened in; C++ stacks are off by default.
  const std::size_t first = at[0];
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(run.snapshot.find("\"user_metadata\":\"step 3\",\"frames\":[]", first), std::string::npos);
}

TEST(OomHistoryTest, StacksKeepTheCallersFrames) {
  const OomRun run = run_until_oom("oom_history_stacks", {"CUDASCOPE_OOM_HISTORY=stacks"});
  const std::size_t alloc = run.snapshot.find(entry("alloc", run.freed));
  ASSERT_NE(alloc, std::string::npos);
  const std::size_t next = run.snapshot.find("{\"action\"", alloc + 1);
  const std::size_t frames = run.snapshot.find("\"frames\":[{\"name\":", alloc);
  EXPECT_LT(frames, next) << "the allocation kept no frames";
}

TEST(OomHistoryTest, OffLeavesTheSnapshotWithoutHistory) {
  const OomRun run = run_until_oom("oom_history_off", {"CUDASCOPE_OOM_HISTORY=off"});
  EXPECT_THAT(run.snapshot, ::testing::StartsWith("{\"segments\":"));
  EXPECT_EQ(run.snapshot.find("{\"action\":"), std::string::npos);
}

// Prints how many trace entries a snapshot holds after one allocation and its free.
int count_history(int, char**) {
  cuda::caching_allocator_delete(cuda::caching_allocator_alloc(4096, 0));
  std::size_t entries = 0;
  for (const auto& trace : cuda::memory::memory_snapshot().device_traces) entries += trace.size();
  std::printf("%zu\n", entries);
  return 0;
}
const ChildModeRegistrar count_mode("--count-history", count_history);

TEST(OomHistoryTest, WithoutAnOomSnapshotNothingIsRecorded) {
  const ChildResult child = run_self({"--count-history"}, {"CUDASCOPE_OOM_HISTORY=stacks"});
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_EQ(child.output, "0\n");
}

// As --count-history, with stderr joined to stdout so that the test reads the runtime's messages.
int count_history_with_messages(int argc, char** argv) {
  dup2(STDOUT_FILENO, STDERR_FILENO);
  return count_history(argc, argv);
}
const ChildModeRegistrar count_with_messages_mode("--count-history-with-messages", count_history_with_messages);

// The number --count-history printed last (after any message).
int entries_counted(const ChildResult& child) {
  const std::size_t line = child.output.find_last_of('\n', child.output.size() - 2);
  return std::stoi(child.output.substr(line == std::string::npos ? 0 : line + 1));
}

ChildResult count_with_oom_history(const std::string& setting) {
  const std::string path = ::testing::TempDir() + "oom_history_setting.json";  // written only at an OOM
  return run_self({"--count-history-with-messages"},
                  {"CUDASCOPE_OOM_SNAPSHOT=" + path, "CUDASCOPE_OOM_HISTORY=" + setting});
}

TEST(OomHistoryTest, FlagsTurnTheHistoryOnAndOff) {
  for (const char* on : {"on", "1", "true", "yes", "events", "stacks"}) {
    const ChildResult child = count_with_oom_history(on);
    ASSERT_EQ(child.exit_code, 0) << child.output;
    EXPECT_GT(entries_counted(child), 0) << on;
  }
  for (const char* off : {"off", "0", "false", "no"}) {
    const ChildResult child = count_with_oom_history(off);
    ASSERT_EQ(child.exit_code, 0) << child.output;
    EXPECT_EQ(child.output, "0\n") << off;
  }
}

// "none" may be meant as an opt-out: a value not understood turns history off, and says so.
TEST(OomHistoryTest, AnUnknownSettingIsReportedAndTurnsTheHistoryOff) {
  const ChildResult child = count_with_oom_history("none");
  ASSERT_EQ(child.exit_code, 0) << child.output;
  EXPECT_THAT(child.output, ::testing::HasSubstr("CUDASCOPE_OOM_HISTORY='none'"));
  EXPECT_THAT(child.output, ::testing::HasSubstr("history is off"));
  EXPECT_EQ(entries_counted(child), 0);
}

}  // namespace
}  // namespace cudascope::testing
