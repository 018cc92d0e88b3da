#include <cudascope/exporters/chrome_trace_writer.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>
#include <zlib.h>

#include <unistd.h>

#include <filesystem>

using namespace cudascope;

namespace {
std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
}

// A trace as a killed process leaves it: n flushed kernel lines, no summary, optionally
// a half-written line at the end.
std::string killed_trace(int kernels, bool half_line) {
  std::string text = "{\"schemaVersion\":1,\"traceEvents\":[";
  for (int i = 0; i < kernels; ++i) {
    text += i == 0 ? "\n" : ",\n";
    text += "{\"ph\":\"X\",\"name\":\"k{" + std::to_string(i) + "}\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":" +
            std::to_string(10 + i) + ".5,\"dur\":1.25,\"args\":{\"grid\":[1,1,1]}}";
  }
  text += ",\n{\"ph\":\"B\",\"name\":\"open\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":1,\"ts\":99.0,\"args\":{}}";
  if (half_line) text += ",\n{\"ph\":\"X\",\"name\":\"cut}\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":50.0,\"args\":{\"grid\":[1,";
  return text;
}
}  // namespace

TEST(TraceReaderTest, ATraceCutMidLineIsClosedAfterItsLastWholeEvent) {
  const auto read = analysis::parse_trace(killed_trace(3, true), "killed");
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_TRUE(read.trace.repaired);
  EXPECT_FALSE(read.trace.complete);
  ASSERT_EQ(read.trace.events.size(), 4u);
  EXPECT_EQ(read.trace.events[2].name, "k{2}") << "braces inside strings do not confuse the cut";
  EXPECT_EQ(read.trace.events[0].ts_ns, 10500);
  EXPECT_EQ(read.trace.events[0].dur_ns, 1250);
  EXPECT_EQ(analysis::validate_trace(read.trace), std::vector<std::string>{}) << "an open range is allowed in a cut trace";
}

TEST(TraceReaderTest, ATruncatedGzipTraceIsReadAsFarAsItGoes) {
  const std::string path = temp_path("cut.json.gz");
  const std::string text = killed_trace(200, false);
  gzFile out = gzopen(path.c_str(), "wb1");
  gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
  gzflush(out, Z_SYNC_FLUSH);  // as the writer flushes; then the process dies: no gzip trailer
  gzclose(out);
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 8);  // drop the trailer gzclose wrote
  const auto read = analysis::read_trace(path);
  ASSERT_TRUE(read.ok()) << read.error;
  EXPECT_EQ(read.trace.events.size(), 201u);
  EXPECT_EQ(analysis::repair_trace_file(path), "");
  const auto again = analysis::read_trace(path);
  ASSERT_TRUE(again.ok()) << again.error;
  EXPECT_EQ(again.trace.events.size(), 201u) << "the repaired file holds the same events";
  std::filesystem::remove(path);
}

TEST(TraceReaderTest, ErrorsNameTheFileAndWhatIsWrong) {
  const auto missing = analysis::read_trace("/nonexistent/trace.json");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error.find("/nonexistent/trace.json"), std::string::npos) << missing.error;
  const auto other = analysis::parse_trace("{\"a\":1}", "other.json");
  EXPECT_NE(other.error.find("other.json"), std::string::npos);
  EXPECT_NE(other.error.find("traceEvents"), std::string::npos) << other.error;
}
