#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

using namespace cudascope;

namespace {
analysis::Trace three_kernels_two_ranges() {
  const std::string text =
      "{\"traceEvents\":[\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":0.0,\"dur\":30.0},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":40.0,\"dur\":10.0},\n"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu, fused\",\"pid\":0,\"tid\":7,\"ts\":60.0,\"dur\":10.0},\n"
      "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":7,\"ts\":80.0,\"dur\":2.0,\"args\":{\"bytes\":4096}},\n"
      "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":7,\"ts\":90.0,\"dur\":2.0,\"args\":{\"bytes\":1024}},\n"
      "{\"ph\":\"B\",\"cat\":\"nvtx\",\"name\":\"step\",\"pid\":1,\"tid\":1,\"ts\":0.0},\n"
      "{\"ph\":\"B\",\"cat\":\"nvtx\",\"name\":\"forward\",\"pid\":1,\"tid\":1,\"ts\":1.0},\n"
      "{\"ph\":\"E\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":1,\"ts\":5.0},\n"
      "{\"ph\":\"E\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":1,\"ts\":100.0},\n"
      "{\"ph\":\"C\",\"name\":\"cudascope dropped records\",\"pid\":1,\"tid\":0,\"ts\":50.0,\"args\":{\"buffer\":12}}\n";
  const auto read = analysis::parse_trace(text, "inline");
  EXPECT_TRUE(read.ok()) << read.error;
  return read.trace;
}
}  // namespace

TEST(TraceStatsTest, KernelTableCountsTotalsExtremesAndShareByName) {
  const auto stats = analysis::compute_stats(three_kernels_two_ranges());
  ASSERT_EQ(stats.kernels.size(), 2u);
  EXPECT_EQ(stats.kernels[0].name, "gemm");
  EXPECT_EQ(stats.kernels[0].count, 2);
  EXPECT_EQ(stats.kernels[0].total_ns, 40000);
  EXPECT_EQ(stats.kernels[0].min_ns, 10000);
  EXPECT_EQ(stats.kernels[0].max_ns, 30000);
  EXPECT_DOUBLE_EQ(stats.kernels[0].average_ns(), 20000.0);
  EXPECT_EQ(stats.kernel_total_ns, 50000);
  const std::string table = analysis::format_stats(stats, false);
  EXPECT_NE(table.find("   80.00 "), std::string::npos) << table;
}

TEST(TraceStatsTest, NvtxRangesPairPerThreadAndCopiesSumBytesByKind) {
  const auto stats = analysis::compute_stats(three_kernels_two_ranges());
  ASSERT_EQ(stats.ranges.size(), 2u);
  EXPECT_EQ(stats.ranges[0].name, "step");
  EXPECT_EQ(stats.ranges[0].total_ns, 100000);
  EXPECT_EQ(stats.ranges[1].name, "forward");
  EXPECT_EQ(stats.ranges[1].total_ns, 4000);
  ASSERT_EQ(stats.copies.size(), 1u);
  EXPECT_EQ(stats.copies[0].kind, "HtoD");
  EXPECT_EQ(stats.copies[0].count, 2);
  EXPECT_EQ(stats.copies[0].bytes, 5120);
  EXPECT_EQ(stats.dropped_buffer, 12) << "a cut trace reports the drops its counters saw";
}

TEST(TraceStatsTest, CsvQuotesNamesWithCommasAndHasOneRowPerEntry) {
  const std::string csv = analysis::format_stats(analysis::compute_stats(three_kernels_two_ranges()), true);
  EXPECT_EQ(csv.rfind("section,name,count,total_us,average_us,min_us,max_us,share_percent,bytes\n", 0), 0u);
  EXPECT_NE(csv.find("kernel,gemm,2,40.000,20.000,10.000,30.000,80.00,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("kernel,\"relu, fused\",1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("memcpy,HtoD,2,4.000,,,,,5120\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("dropped,buffer,12,"), std::string::npos) << csv;
}
