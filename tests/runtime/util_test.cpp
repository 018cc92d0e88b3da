// cudascope::util: byte sources and their budget, gzip integrity, output files, the JSON
// escaper and the byte formats.
#include <cudascope/util/byte_format.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>
#include <cudascope/util/json_escape.h>
#include <cudascope/util/library_path.h>
#include <cudascope/util/output_file.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace cudascope::util {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "util_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string raw_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put_raw_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Text that compresses but is not trivial, so the deflate stream spans many blocks.
std::string sample_text(size_t n) {
  std::mt19937 rng(7);
  std::string s;
  while (s.size() < n) s += "line " + std::to_string(rng() % 1000) + " of the sample\n";
  return s;
}

TEST(UtilByteSourceTest, GzipFileRoundTripsThroughOutputFileAndReadFile) {
  const std::string path = temp_path("round.txt.gz");
  const std::string text = sample_text(300000);
  write_file(path, text);
  EXPECT_TRUE(is_gzip(raw_bytes(path)));
  std::string error;
  EXPECT_EQ(read_file(path, 1 << 20, error), text);
  EXPECT_EQ(error, "");
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, PlainFileIsReadAsIs) {
  const std::string path = temp_path("plain.txt");
  write_file(path, "hello\n");
  EXPECT_EQ(raw_bytes(path), "hello\n");
  std::string error;
  EXPECT_EQ(read_file(path, 100, error), "hello\n");
  EXPECT_EQ(error, "");
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, FlippedCrcBitIsAnError) {
  const std::string path = temp_path("crc.gz");
  write_file(path, sample_text(50000));
  std::string bytes = raw_bytes(path);
  bytes[bytes.size() - 8] ^= 0x01;  // first byte of the CRC-32 trailer
  put_raw_bytes(path, bytes);
  std::string error;
  EXPECT_EQ(read_file(path, 1 << 20, error), "");
  EXPECT_NE(error.find("gzip data is corrupt"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, FlippedDataBitIsAnError) {
  const std::string path = temp_path("data.gz");
  write_file(path, sample_text(50000));
  std::string bytes = raw_bytes(path);
  bytes[bytes.size() / 2] ^= 0x10;
  put_raw_bytes(path, bytes);
  std::string error;
  EXPECT_EQ(read_file(path, 1 << 20, error), "");
  EXPECT_NE(error.find("gzip data is corrupt"), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, TruncatedGzipIsAnError) {
  const std::string path = temp_path("trunc.gz");
  write_file(path, sample_text(50000));
  const std::string bytes = raw_bytes(path);
  for (size_t cut : {size_t(1), size_t(4), bytes.size() / 2}) {
    put_raw_bytes(path, bytes.substr(0, bytes.size() - cut));
    std::string error;
    EXPECT_EQ(read_file(path, 1 << 20, error), "") << "cut " << cut;
    EXPECT_NE(error.find("ends early"), std::string::npos) << "cut " << cut << ": " << error;
  }
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, TrailingGarbageAfterGzipIsAnError) {
  const std::string path = temp_path("garbage.gz");
  write_file(path, "payload");
  put_raw_bytes(path, raw_bytes(path) + "junk");
  std::string error;
  EXPECT_EQ(read_file(path, 1 << 20, error), "");
  EXPECT_FALSE(error.empty());
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, ConcatenatedGzipMembersAreReadInOrder) {
  const std::string a = temp_path("a.gz"), b = temp_path("b.gz"), both = temp_path("ab.gz");
  write_file(a, "first ");
  write_file(b, "second");
  put_raw_bytes(both, raw_bytes(a) + raw_bytes(b));
  std::string error;
  EXPECT_EQ(read_file(both, 100, error), "first second");
  EXPECT_EQ(error, "");
  for (const auto& p : {a, b, both}) std::remove(p.c_str());
}

TEST(UtilByteSourceTest, ReadAllStopsAtTheBudget) {
  const std::string text(1000, 'x');
  auto source = memory_source(text);
  std::string error;
  EXPECT_EQ(read_all(*source, 999, error), "");
  EXPECT_EQ(error, budget_exceeded_message(999));
  auto exact = memory_source(text);
  error.clear();
  EXPECT_EQ(read_all(*exact, 1000, error), text);
  EXPECT_EQ(error, "");
}

TEST(UtilByteSourceTest, DevZeroStopsAtTheBudget) {
  std::string error;
  const std::string out = read_file("/dev/zero", 3u << 20, error);
  EXPECT_EQ(out, "");
  EXPECT_NE(error.find("/dev/zero: input exceeds the 3 MiB budget"), std::string::npos) << error;
}

TEST(UtilByteSourceTest, GzipBombStopsAtTheBudgetWithoutInflatingTheRest) {
  // 64 MiB of zeros compress to about 64 KiB; a 1 MiB budget must stop the inflater early.
  const std::string path = temp_path("bomb.gz");
  {
    OutputFile out(path, 9);
    const std::string zeros(1 << 20, '\0');
    for (int i = 0; i < 64; ++i) out.write(zeros);
    out.close();
  }
  EXPECT_LT(raw_bytes(path).size(), 1u << 20);
  std::string error;
  auto source = open_input(path, 1 << 20, error);
  ASSERT_NE(source, nullptr) << error;
  std::vector<char> chunk(1 << 16);
  uint64_t total = 0;
  while (size_t got = source->read(chunk.data(), chunk.size())) total += got;
  EXPECT_LE(total, 1u << 20);
  EXPECT_NE(source->error().find("exceeds the 1 MiB budget"), std::string::npos) << source->error();
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, ByteReaderStreamsAndStopsAtItsBudget) {
  const std::string text = sample_text(3 << 20);
  auto source = memory_source(text);
  ByteReader reader(*source, text.size());
  std::string seen;
  while (reader.ensure(1)) {
    seen.append(reader.data(), reader.available());
    reader.consume(reader.available());
  }
  EXPECT_EQ(seen, text);
  EXPECT_EQ(reader.error(), "");

  auto longer = memory_source(text);
  ByteReader bounded(*longer, text.size() - 1);
  uint64_t got = 0;
  while (bounded.ensure(1)) {
    got += bounded.available();
    bounded.consume(bounded.available());
  }
  EXPECT_LT(got, text.size());
  EXPECT_EQ(bounded.error(), budget_exceeded_message(text.size() - 1));
  EXPECT_FALSE(bounded.ensure(1));  // the error sticks
}

TEST(UtilByteSourceTest, ByteReaderRefusesAWindowPastTheBudget) {
  const std::string text(100, 'x');
  auto source = memory_source(text);
  ByteReader reader(*source, 50);
  EXPECT_FALSE(reader.ensure(60));
  EXPECT_EQ(reader.error(), budget_exceeded_message(50));
}

TEST(UtilByteSourceTest, DirectoriesAndMissingFilesAreNamed) {
  std::string error;
  EXPECT_EQ(open_file_source(::testing::TempDir(), error), nullptr);
  EXPECT_NE(error.find("is a directory"), std::string::npos);
  error.clear();
  read_file("/nonexistent/x.json", 100, error);
  EXPECT_NE(error.find("/nonexistent/x.json: cannot open"), std::string::npos) << error;
}

TEST(UtilByteFormatTest, ParsesSizesAndRejectsJunk) {
  uint64_t b = 0;
  EXPECT_TRUE(parse_byte_size("512MiB", b));
  EXPECT_EQ(b, 512u << 20);
  EXPECT_TRUE(parse_byte_size("1.5GiB", b));
  EXPECT_EQ(b, 3ull << 29);
  EXPECT_TRUE(parse_byte_size("100MB", b));
  EXPECT_EQ(b, 100u << 20);
  EXPECT_TRUE(parse_byte_size("16g", b));
  EXPECT_EQ(b, 16ull << 30);
  EXPECT_TRUE(parse_byte_size("4096", b));
  EXPECT_EQ(b, 4096u);
  EXPECT_FALSE(parse_byte_size("lots", b));
  EXPECT_FALSE(parse_byte_size("12 parsecs", b));
  EXPECT_FALSE(parse_byte_size("-1GiB", b));
  EXPECT_FALSE(parse_byte_size("GiB", b));
  EXPECT_FALSE(parse_byte_size("1e400", b));
}

TEST(UtilInputBudgetTest, EnvironmentOverridesAndBadValuesAreNamed) {
  ::setenv("CUDASCOPE_INPUT_BUDGET", "64MiB", 1);
  EXPECT_EQ(input_budget(), 64u << 20);
  ::setenv("CUDASCOPE_INPUT_BUDGET", "plenty", 1);
  try {
    input_budget();
    ADD_FAILURE() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CUDASCOPE_INPUT_BUDGET='plenty'"), std::string::npos);
  }
  ::unsetenv("CUDASCOPE_INPUT_BUDGET");
  EXPECT_GT(input_budget(), 0u);
  EXPECT_EQ(budget_exceeded_message(uint64_t{8} << 30), "input exceeds the 8192 MiB budget (set CUDASCOPE_INPUT_BUDGET to raise it)");
}

TEST(UtilOutputFileTest, FlushedGzipIsReadableBeforeClose) {
  const std::string path = temp_path("flush.json.gz");
  OutputFile out(path);
  EXPECT_TRUE(out.gzip());
  out.write("{\"a\":1}\n");
  out.flush();
  // A sync flush: what was written decompresses, though the stream has no trailer yet.
  const std::string flushed = raw_bytes(path);
  auto source = inflate_source(memory_source(flushed));
  std::string got(64, '\0');
  got.resize(source->read(got.data(), got.size()));
  EXPECT_EQ(got, "{\"a\":1}\n");
  out.close();
  std::remove(path.c_str());
}

TEST(UtilOutputFileTest, UncreatableFileNamesThePath) {
  try {
    OutputFile out("/nonexistent-dir/trace.json");
    ADD_FAILURE() << "expected runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create '/nonexistent-dir/trace.json'"), std::string::npos) << e.what();
  }
}

TEST(UtilOutputFileTest, FullDiskIsReportedAtClose) {
  if (std::FILE* probe = std::fopen("/dev/full", "wb")) std::fclose(probe);
  else GTEST_SKIP() << "/dev/full is not available here";
  OutputFile out("/dev/full");
  out.write("x");  // buffered by stdio
  EXPECT_THROW(out.close(), std::runtime_error);
}

TEST(UtilJsonEscapeTest, EscapesQuotesBackslashesAndControlCharacters) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\nd\re\tf\x01g\x1fh\xc3\xa9", 17));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u001fh\xc3\xa9\"");
}

TEST(UtilJsonEscapeTest, ReplacesWhatIsNotUtf8SoTheOutputIsJson) {
  const auto escaped = [](std::string_view text) {
    std::string out;
    append_json_string(out, text);
    return out;
  };
  const std::string fffd = "\xef\xbf\xbd";
  // Well-formed UTF-8 of every length passes through, U+10FFFF included.
  EXPECT_EQ(escaped("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"),
            "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"");
  // Each byte of an ill-formed sequence becomes U+FFFD: stray bytes, an encoded lone
  // surrogate (what a decoder keeping "\ud800" writes), overlong forms, past U+10FFFF,
  // and a sequence cut by the end of the text or by ASCII.
  EXPECT_EQ(escaped("\xff"), "\"" + fffd + "\"");
  EXPECT_EQ(escaped("\x80x"), "\"" + fffd + "x\"");
  EXPECT_EQ(escaped("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"");
  EXPECT_EQ(escaped("\xc0\xaf"), "\"" + fffd + fffd + "\"");
  EXPECT_EQ(escaped("\xe0\x80\xaf"), "\"" + fffd + fffd + fffd + "\"");
  EXPECT_EQ(escaped("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");
  EXPECT_EQ(escaped("ab\xe2\x82"), "\"ab" + fffd + fffd + "\"");
  EXPECT_EQ(escaped("\xe2\x82\""), "\"" + fffd + fffd + "\\\"\"");
  for (const std::string_view bad : {"\xff", "\xed\xa0\x80", "\xc0\xaf", "ab\xe2\x82"}) {
    EXPECT_FALSE(is_valid_utf8(bad)) << bad;
    EXPECT_TRUE(is_valid_utf8(escaped(bad))) << bad;
  }
}

// The end-of-input rule every reader applies once its document is parsed.
TEST(UtilByteSourceTest, FinishInputAllowsOnlyTheGivenTrailingBytes) {
  {
    auto source = memory_source("doc  \n");
    ByteReader reader(*source);
    ASSERT_TRUE(reader.ensure(3));
    reader.consume(3);
    EXPECT_EQ(finish_input(reader, " \n"), "");
  }
  {
    auto source = memory_source("doc \nX");
    ByteReader reader(*source);
    ASSERT_TRUE(reader.ensure(3));
    reader.consume(3);
    EXPECT_EQ(finish_input(reader, " \n"),
              "expected the end of the data after byte 3, found byte 0x58 at byte 5 (trailing data: two files joined, "
              "or a damaged one?)");
  }
}

TEST(UtilByteSourceTest, FinishInputChecksTheGzipTrailerAfterTheLastByteWasRead) {
  const std::string path = temp_path("finish.gz");
  write_file(path, "payload");
  std::string good = raw_bytes(path);
  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
    bool early;
  };
  const Case cases[] = {
      {"bad CRC-32", [&] { std::string g = good; g[g.size() - 8] ^= 1; return g; }(), "incorrect data check", false},
      {"bad length", [&] { std::string g = good; g[g.size() - 4] ^= 1; return g; }(), "incorrect length check", false},
      {"missing trailer", good.substr(0, good.size() - 8), "ends early", true},
      {"trailing garbage", good + "junk", "gzip data is corrupt", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto source = inflate_source(memory_source(c.bytes));
    ByteReader reader(*source);
    // A reader that stops where its document ends ("payload" is all it wants) ...
    ASSERT_TRUE(reader.ensure(7));
    EXPECT_EQ(std::string(reader.data(), 7), "payload");
    reader.consume(7);
    // ... still learns that the file is damaged.
    const std::string damage = finish_input(reader);
    EXPECT_NE(damage.find(c.says), std::string::npos) << damage;
    EXPECT_EQ(source->ended_early(), c.early);
  }
  auto source = inflate_source(memory_source(good));
  ByteReader reader(*source);
  ASSERT_TRUE(reader.ensure(7));
  reader.consume(7);
  EXPECT_EQ(finish_input(reader), "");
  std::remove(path.c_str());
}

TEST(UtilByteSourceTest, PeekedInputShowsItsHeadThenYieldsTheWholeStreamOnce) {
  const std::string path = temp_path("peek.txt.gz");
  const std::string text = sample_text(100000);
  write_file(path, text);
  std::string error;
  auto input = PeekedInput::open(path, UINT64_MAX, error);
  ASSERT_NE(input, nullptr) << error;
  EXPECT_EQ(input->path(), path);
  EXPECT_EQ(input->head(4), text.substr(0, 4));
  EXPECT_EQ(input->head(70000), text.substr(0, 70000)) << "the head grows as asked, decompressed";
  EXPECT_EQ(input->head(10), text.substr(0, 10));
  auto source = input->take();
  EXPECT_EQ(read_all(*source, UINT64_MAX, error), text);
  EXPECT_EQ(error, "");
  EXPECT_EQ(PeekedInput::open(temp_path("missing"), 1, error), nullptr);
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  std::remove(path.c_str());
}

TEST(UtilByteFormatTest, PyTorchFormatSize) {
  EXPECT_EQ(format_size(0), "0 bytes");
  EXPECT_EQ(format_size(1024), "1024 bytes");
  EXPECT_EQ(format_size(1536), "1.50 KiB");
  EXPECT_EQ(format_size(1048576), "1024.00 KiB");
  EXPECT_EQ(format_size(20u << 20), "20.00 MiB");
  EXPECT_EQ(format_size(5ull << 29), "2.50 GiB");
}

TEST(UtilByteFormatTest, MemorySummaryFormatScalesByReference) {
  EXPECT_EQ(format_summary_size(512, 512), "   512 B  ");
  EXPECT_EQ(format_summary_size(786432, 786432), "   768 KiB");
  EXPECT_EQ(format_summary_size(0, 20 << 20), "     0 KiB");
  EXPECT_EQ(format_summary_size(3ll << 30, 3ll << 30), "  3072 MiB");
}

TEST(UtilByteFormatTest, HumanBytesForTables) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
  EXPECT_EQ(format_bytes(5ull << 40), "5.00 TiB");
}

}  // namespace
}  // namespace cudascope::util

namespace cudascope::util {
namespace {

TEST(UtilLibraryPathTest, FindsLibrariesBesideTheRuntimeAndNothingElse) {
  const std::string dir = runtime_library_directory();
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(dir.back(), '/');
  // The runtime library itself is beside the runtime library.
  EXPECT_EQ(library_beside_runtime("libcudascope_runtime.so"), dir + "libcudascope_runtime.so");
  EXPECT_EQ(library_beside_runtime("libcudascope_no_such_tool.so"), "");
}

}  // namespace
}  // namespace cudascope::util
