// The readers behind the commands, as a user meets them (issue 25): a damaged gzip input
// is refused by every command (a trace cut before its trailer is read with a note), a
// snapshot whose totals cannot be is refused, `stats --json` is JSON whatever the names
// hold, and `stats` and `diff` read pipes (each input opened and read once).
#include "test_support.h"

#include "run_cli.h"

#include <cudascope/util/output_file.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using cudascope::testing::bytes_of;
using cudascope::testing::put_bytes;
using cudascope::testing::run_cli;
using cudascope::testing::run_shell;
using ::testing::HasSubstr;

std::string data(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "reader_input_" + std::to_string(::getpid()) + "_" + name;
}

// `text` written gzip-compressed to a temporary `name` (ending in .gz); its bytes.
std::string gzip_bytes(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  cudascope::util::write_file(path, text);
  std::string bytes = bytes_of(path);
  std::remove(path.c_str());
  return bytes;
}

struct Corruption {
  const char* name;
  std::function<std::string(std::string)> apply;
  bool only_cut;
};

const std::vector<Corruption> kCorruptions = {
    {"bad_crc", [](std::string g) { g[g.size() - 8] ^= 0x01; return g; }, false},
    {"bad_length", [](std::string g) { g[g.size() - 4] ^= 0x01; return g; }, false},
    {"no_trailer", [](std::string g) { return g.substr(0, g.size() - 8); }, true},
    {"trailing_garbage", [](std::string g) { return g + "garbage"; }, false},
};

// `gzip -t` fails on each of these; so must the command (exit non-zero, saying why).
void expect_each_corruption_refused(const std::string& command, const std::string& source, const std::string& suffix,
                                    bool trace) {
  const std::string good = gzip_bytes("good" + suffix, bytes_of(source));
  for (const Corruption& c : kCorruptions) {
    SCOPED_TRACE(command + " " + source + ": " + c.name);
    const std::string path = temp_path(std::string(c.name) + suffix);
    put_bytes(path, c.apply(good));
    const auto gzip_test = run_shell("gzip -t " + path);
    EXPECT_NE(gzip_test.exit_code, 0) << "gzip -t accepts the corruption: " << gzip_test.output;
    const auto result = run_cli("CUDASCOPE_BACKEND=sim", command + " " + path);
    if (trace && c.only_cut) {
      // A trace cut before its trailer (a killed writer) is read, and says so.
      EXPECT_EQ(result.exit_code, 0) << result.output;
      EXPECT_THAT(result.output, HasSubstr("gzip data ends early"));
    } else {
      EXPECT_NE(result.exit_code, 0) << result.output;
      EXPECT_THAT(result.output, HasSubstr("gzip data"));
    }
    std::remove(path.c_str());
  }
}

TEST(ReaderInputTest, SnapshotStatsRefusesEachGzipCorruptionOfAPickle) {
  expect_each_corruption_refused("snapshot-stats", data("snap_small_p5.pickle"), ".pickle.gz", false);
}

TEST(ReaderInputTest, SnapshotStatsRefusesEachGzipCorruptionOfJson) {
  expect_each_corruption_refused("snapshot-stats", data("snap_small.json"), ".json.gz", false);
}

TEST(ReaderInputTest, StatsRefusesGzipDamageOfATraceAndReadsACutOne) {
  expect_each_corruption_refused("stats --json", data("trace_golden.json"), ".json.gz", true);
}

TEST(ReaderInputTest, WhatifAndDiffRefuseEachGzipCorruptionOfAPickle) {
  expect_each_corruption_refused("whatif --json", data("snap_small_p5.pickle"), ".pickle.gz", false);
  expect_each_corruption_refused("diff " + data("snap_small_p5.pickle"), data("snap_small_p5.pickle"), ".pickle.gz", false);
}

TEST(ReaderInputTest, ReplayRefusesEachGzipCorruption) {
  const std::string sequence = "{\"conf\":\"\"}\n{\"op\":\"alloc\",\"id\":1,\"size\":512}\n{\"op\":\"free\",\"id\":1}\n";
  const std::string fixture = temp_path("sequence.jsonl");
  put_bytes(fixture, sequence);
  expect_each_corruption_refused("replay", fixture, ".jsonl.gz", false);
  std::remove(fixture.c_str());
}

// A trace cut short (a killed writer, a copy stopped half way) is read up to its last complete
// event; what stats says of it must not pass for the whole recording: --check fails naming the
// byte where the file ends, and the tables and a summary come with a word on stderr.
TEST(ReaderInputTest, StatsCheckFailsOnACutTraceAndEveryOtherOutputWarnsOnStderr) {
  const std::string whole = data("train_h100_ours.json.gz");
  const std::string bytes = bytes_of(whole);
  ASSERT_GT(bytes.size(), 1000u);
  const std::string cut = temp_path("cut_trace.json.gz");
  put_bytes(cut, bytes.substr(0, bytes.size() / 2));
  const std::string ends_at = "the file ends at byte [0-9]+ before the trace does";

  EXPECT_EQ(run_cli("", "stats --check " + whole + " >/dev/null").exit_code, 0);
  const auto check = run_cli("", "stats --check " + cut + " >/dev/null");
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_THAT(check.output, ::testing::ContainsRegex(ends_at + ".*: not a whole trace"));
  EXPECT_THAT(check.output, ::testing::Not(HasSubstr("follow the trace format's rules")));
  const auto ranks_check = run_cli("", "stats --check " + whole + " " + cut + " >/dev/null");
  EXPECT_EQ(ranks_check.exit_code, 1) << ranks_check.output;

  // Only stderr is kept: the warning must be there whatever stdout goes to.
  for (const char* format : {"", "--csv ", "--json "}) {
    const auto tables = run_cli("", std::string("stats ") + format + cut + " >/dev/null");
    EXPECT_EQ(tables.exit_code, 0) << format << tables.output;
    EXPECT_THAT(tables.output, HasSubstr(cut + ": ")) << format;
    EXPECT_THAT(tables.output, ::testing::ContainsRegex(ends_at)) << format;
  }
  const std::string summary = temp_path("cut_summary.json");
  const auto summary_out = run_cli("", "stats --summary-out " + summary + " " + cut);
  EXPECT_EQ(summary_out.exit_code, 0) << summary_out.output;
  EXPECT_THAT(summary_out.output, ::testing::ContainsRegex(ends_at));
  std::remove(summary.c_str());
  std::remove(cut.c_str());
}

TEST(ReaderInputTest, SnapshotStatsRefusesMoreAllocatedThanReserved) {
  nlohmann::json doc = nlohmann::json::parse(bytes_of(data("snap_small.json")));
  doc["segments"][0]["total_size"] = 375u << 20;
  doc["segments"][0]["allocated_size"] = 4400000000ull;
  const std::string path = temp_path("over.json");
  put_bytes(path, doc.dump());
  const auto result = run_cli("", "snapshot-stats --json " + path);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("allocated_size 4400000000 is larger than the segment's total_size"));
  std::remove(path.c_str());
}

TEST(ReaderInputTest, SnapshotStatsRefusesAReservationNoDeviceHas) {
  nlohmann::json doc = nlohmann::json::parse(bytes_of(data("snap_small.json")));
  doc["segments"][0]["total_size"] = 9200000000000000000ull;
  const std::string path = temp_path("huge.json");
  put_bytes(path, doc.dump());
  const auto result = run_cli("", "snapshot-stats " + path);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("larger than any device's memory"));
  std::remove(path.c_str());
}

TEST(ReaderInputTest, StatsJsonIsJsonWhateverTheNamesHold) {
  const std::string trace = std::string("{\"traceEvents\":[") +
                            "{\"name\":\"lone \\udc00\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2}," +
                            "{\"name\":\"raw \xff\xc3(\",\"ph\":\"X\",\"cat\":\"cpu_op\",\"pid\":0,\"tid\":7,\"ts\":4,\"dur\":2}," +
                            "{\"name\":\"\xed\xa0\x80 encoded surrogate\",\"ph\":\"X\",\"cat\":\"user_annotation\",\"pid\":0,\"tid\":7,\"ts\":7,\"dur\":2}" +
                            "]}";
  const std::string path = temp_path("names.json");
  put_bytes(path, trace);
  const auto result = run_cli("", "stats --json " + path + " 2>/dev/null");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json parsed;
  EXPECT_NO_THROW(parsed = nlohmann::json::parse(result.output)) << result.output;
  EXPECT_THAT(result.output, HasSubstr("\xef\xbf\xbd")) << "replaced by U+FFFD";
  std::remove(path.c_str());
}

TEST(ReaderInputTest, DiffJsonIsJsonWhateverTheNamesHold) {
  const auto trace = [](const std::string& name, int dur) {
    return "{\"traceEvents\":[{\"name\":\"" + name + "\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,"
           "\"ts\":1,\"dur\":" + std::to_string(dur) + "}]}";
  };
  const std::string a = temp_path("names_a.json"), b = temp_path("names_b.json");
  put_bytes(a, trace("raw \xff\xc3( kernel", 2));
  put_bytes(b, trace("raw \xff\xc3( kernel", 5));
  const auto result = run_cli("", "diff --json " + a + " " + b + " 2>/dev/null");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  nlohmann::json parsed;
  EXPECT_NO_THROW(parsed = nlohmann::json::parse(result.output)) << result.output;
  EXPECT_THAT(result.output, HasSubstr("\xef\xbf\xbd")) << "replaced by U+FFFD";
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(ReaderInputTest, StatsReadsATraceFromStdinAndFromANamedPipe) {
  const std::string expected = run_cli("", "stats --json " + data("train_h100_ours.json.gz")).output;
  ASSERT_THAT(expected, HasSubstr("\"kernels\""));
  const auto piped = run_shell("gzip -dc " + data("train_h100_ours.json.gz") + " | " + CUDASCOPE_CLI_PATH +
                               " stats --json /dev/stdin");
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(nlohmann::json::parse(piped.output, nullptr, false), nlohmann::json::parse(expected)) << piped.output;

  const std::string fifo = temp_path("trace.fifo");
  std::remove(fifo.c_str());
  const auto named = run_shell("mkfifo " + fifo + " && (cat " + data("train_h100_ours.json.gz") + " > " + fifo +
                               " &) && timeout 60 " + CUDASCOPE_CLI_PATH + " stats --json " + fifo);
  EXPECT_EQ(named.exit_code, 0) << named.output;
  EXPECT_EQ(nlohmann::json::parse(named.output, nullptr, false), nlohmann::json::parse(expected)) << named.output;
  std::remove(fifo.c_str());
}

TEST(ReaderInputTest, StatsSummaryOutReadsAPipe) {
  const std::string summary = temp_path("summary.json");
  const auto result = run_shell("gzip -dc " + data("train_h100_ours.json.gz") + " | " + CUDASCOPE_CLI_PATH +
                                " stats --summary-out " + summary + " /dev/stdin");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("summary written to " + summary));
  const auto merged = run_shell("cat " + summary + " | " + CUDASCOPE_CLI_PATH + " stats /dev/stdin");
  EXPECT_EQ(merged.exit_code, 0) << merged.output;
  std::remove(summary.c_str());
}

TEST(ReaderInputTest, DiffReadsTwoPipes) {
  const std::string expected = run_cli("", "diff -q --json " + data("train_h100_ours.json.gz") + " " +
                                               data("train_h100_kineto.json.gz")).output;
  ASSERT_THAT(expected, HasSubstr("\"exit_code\""));
  const std::string a = temp_path("a.fifo"), b = temp_path("b.fifo");
  std::remove(a.c_str());
  std::remove(b.c_str());
  const auto piped = run_shell("mkfifo " + a + " " + b + " && (gzip -dc " + data("train_h100_ours.json.gz") + " > " + a +
                               " &) && (cat " + data("train_h100_kineto.json.gz") + " > " + b + " &) && timeout 60 " +
                               CUDASCOPE_CLI_PATH + " diff -q --json " + a + " " + b);
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  nlohmann::json got = nlohmann::json::parse(piped.output, nullptr, false);
  nlohmann::json want = nlohmann::json::parse(expected);
  ASSERT_FALSE(got.is_discarded()) << piped.output;
  // The files' names differ (pipes); the tables must not.
  for (auto* doc : {&got, &want}) {
    doc->erase("a");
    doc->erase("b");
    doc->erase("files");
  }
  EXPECT_EQ(got, want);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// A snapshot from a pipe (snapshot-stats read pipes before; diff now does too).
TEST(ReaderInputTest, DiffOfSnapshotsFromPipes) {
  const auto piped = run_shell("cat " + data("snap_small_p5.pickle") + " | " + CUDASCOPE_CLI_PATH + " diff -q /dev/stdin " +
                               data("snap_small.json"));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
}

}  // namespace
