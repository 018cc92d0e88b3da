// Readers stop at their memory budget: the real `cudascope` on input that never ends
// (/dev/zero) and on gzip bombs, under an address-space limit (ulimit -v), fails quickly
// with a clear message and a non-zero exit instead of growing until the kernel kills it.
#include "test_support.h"

#include "run_cli.h"

#include <cudascope/util/output_file.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

using cudascope::testing::run_shell;
using Result = cudascope::testing::CliResult;
using ::testing::HasSubstr;

// The limit the command runs under: far below what unbounded growth would reach, far above
// what the command needs to start.
constexpr const char* kAddressSpaceKiB = "1048576";  // 1 GiB

struct Timed {
  Result result;
  double seconds;
};

// Runs the CLI under ulimit -v and a wall-clock timeout, on the simulated backend (replay
// would pick a GPU when there is one; the limit must not meet the CUDA driver's mappings).
Timed run_limited(const std::string& environment, const std::string& arguments) {
  const auto start = std::chrono::steady_clock::now();
  Result result = run_shell(std::string("ulimit -v ") + kAddressSpaceKiB + " && CUDASCOPE_BACKEND=sim " + environment +
                            " timeout 120 " + CUDASCOPE_CLI_PATH + " " + arguments);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {std::move(result), seconds};
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "bounded_input_" + std::to_string(::getpid()) + "_" + name;
}

// `prefix`, then `total` bytes of `fill`, gzip-compressed (fast level): a few MiB on disk.
void write_bomb(const std::string& path, const std::string& prefix, char fill, std::uint64_t total) {
  cudascope::util::OutputFile out(path, 1);
  out.write(prefix);
  const std::string chunk(1 << 20, fill);
  for (std::uint64_t done = 0; done < total; done += chunk.size()) out.write(chunk);
  out.close();
}

TEST(BoundedInputTest, ReplayOfDevZeroFailsOnItsFirstLine) {
  const Timed run = run_limited("", "replay /dev/zero");
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_NE(run.result.exit_code, 124) << "timed out: " << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("/dev/zero:1: a line longer than 1 MiB"));
  EXPECT_LT(run.seconds, 30.0);
}

TEST(BoundedInputTest, ReplayOfAGzipBombFailsOnItsFirstLine) {
  const std::string path = temp_path("bomb.jsonl.gz");
  write_bomb(path, "", '\0', std::uint64_t{64} << 20);
  const Timed run = run_limited("", "replay " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr(path + ":1: a line longer than 1 MiB"));
  EXPECT_LT(run.seconds, 30.0);
  std::remove(path.c_str());
}

TEST(BoundedInputTest, ReplayOfACorruptGzipIsAnError) {
  const std::string path = temp_path("corrupt.jsonl.gz");
  {
    cudascope::util::OutputFile out(path);
    out.write("{\"conf\":\"\"}\n{\"op\":\"alloc\",\"id\":1,\"size\":512}\n");
    out.close();
  }
  // Flip a bit of the CRC-32 in the trailer: the data still inflates, the check must fail.
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, -8, SEEK_END);
  const int byte = std::fgetc(f);
  std::fseek(f, -8, SEEK_END);
  std::fputc(byte ^ 1, f);
  std::fclose(f);
  // The first alloc starts the sim device: a small one, which 1 GiB of address space holds.
  const Timed run = run_limited("CUDASCOPE_SIM_MEMORY=128MiB", "replay " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("gzip data is corrupt"));
  std::remove(path.c_str());
}

// A replay sequence is read as the other inputs are: 320 MiB of empty lines (from a few
// hundred KiB of gzip) stop at the 256 MiB budget, quickly, instead of being read to the end.
TEST(BoundedInputTest, ReplayOfAGzipBombOfEmptyLinesStopsAtTheBudget) {
  const std::string path = temp_path("newlines.jsonl.gz");
  write_bomb(path, "{\"conf\":\"\"}\n", '\n', std::uint64_t{320} << 20);
  const Timed run = run_limited("env -u CUDASCOPE_INPUT_BUDGET", "replay " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_NE(run.result.exit_code, 124) << "timed out: " << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("input exceeds the 256 MiB budget"));
  EXPECT_THAT(run.result.output, HasSubstr(path));
  EXPECT_LT(run.seconds, 30.0);
  std::remove(path.c_str());
}

// 300M None pushes in 300 MB of pickle (a few hundred KiB of gzip): under the input budget
// at first, but 4.8 GB of stack unbounded. The pickle machine stops at its own limit (half
// the budget) with a message naming it, not with std::bad_alloc at the address-space limit.
TEST(BoundedInputTest, SnapshotStatsOfAPickleOfNonesStopsAtTheMachineLimit) {
  const std::string path = temp_path("nones.pickle.gz");
  write_bomb(path, std::string("\x80\x04", 2), 'N', std::uint64_t{300} << 20);
  const Timed run = run_limited("env -u CUDASCOPE_INPUT_BUDGET", "snapshot-stats " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("the pickle machine's limit"));
  EXPECT_THAT(run.result.output, HasSubstr("CUDASCOPE_INPUT_BUDGET"));
  EXPECT_THAT(run.result.output, ::testing::Not(HasSubstr("bad_alloc")));
  EXPECT_LT(run.seconds, 30.0);
  std::remove(path.c_str());
}

TEST(BoundedInputTest, SnapshotStatsOfDevZeroIsAnError) {
  const Timed run = run_limited("", "snapshot-stats /dev/zero");
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("/dev/zero"));
  EXPECT_THAT(run.result.output, HasSubstr("found byte 0x00"));
  EXPECT_LT(run.seconds, 30.0);
}

TEST(BoundedInputTest, TraceStatsOfDevZeroIsAnError) {
  const Timed run = run_limited("", "stats /dev/zero");
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_NE(run.result.exit_code, 124) << "timed out: " << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("/dev/zero"));
  EXPECT_LT(run.seconds, 30.0);
}

TEST(BoundedInputTest, SnapshotStatsOfAGzipBombStopsAtTheDefaultBudget) {
  // A JSON document that is all whitespace after its first byte: valid as far as the reader
  // can tell until the end, so only the budget stops it. Under ulimit -v 1 GiB the default
  // budget is a quarter of that; the bomb inflates to more.
  const std::string path = temp_path("bomb.json.gz");
  write_bomb(path, "{", ' ', std::uint64_t{300} << 20);
  const Timed run = run_limited("env -u CUDASCOPE_INPUT_BUDGET", "snapshot-stats " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_NE(run.result.exit_code, 124) << "timed out: " << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("input exceeds the 256 MiB budget"));
  EXPECT_THAT(run.result.output, HasSubstr(path));
  EXPECT_LT(run.seconds, 60.0);
  std::remove(path.c_str());
}

TEST(BoundedInputTest, SnapshotStatsHonoursAnExplicitBudget) {
  const std::string path = temp_path("small_bomb.json.gz");
  write_bomb(path, "{", ' ', std::uint64_t{64} << 20);
  const Timed run = run_limited("CUDASCOPE_INPUT_BUDGET=16MiB", "snapshot-stats " + path);
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("input exceeds the 16 MiB budget (set CUDASCOPE_INPUT_BUDGET to raise it)"));
  std::remove(path.c_str());
}

TEST(BoundedInputTest, ABadBudgetVariableIsNamed) {
  const Timed run = run_limited("CUDASCOPE_INPUT_BUDGET=lots", "snapshot-stats /dev/zero");
  EXPECT_NE(run.result.exit_code, 0) << run.result.output;
  EXPECT_THAT(run.result.output, HasSubstr("CUDASCOPE_INPUT_BUDGET='lots'"));
}

}  // namespace
