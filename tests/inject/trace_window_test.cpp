// TraceWindows, the sink behind `cudascope trace --pid`: a window asked for before the
// recording's session has begun (the metrics server answers from the program's start, the
// session begins with CUDA) still gets the header that names the recording.
#include "trace_window.h"

#include <cudascope/profiler/record.h>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using cudascope::inject::TraceWindows;
using cudascope::profiler::Record;
using cudascope::profiler::RecordKind;
using cudascope::profiler::TraceInfo;
using cudascope::profiler::TraceSummary;

struct WindowDir {
  std::string path;
  WindowDir() {
    char pattern[] = "/tmp/cudascope-window-test-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~WindowDir() { std::filesystem::remove_all(path); }
};

TraceInfo session_info() {
  TraceInfo info;
  info.process_id = 42;
  info.process_name = "train.py";
  info.source = "cupti";
  info.activities = "kernel,memcpy";
  return info;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

TEST(TraceWindowsTest, AWindowOpenedBeforeTheSessionBeganGetsItsHeaderThen) {
  const WindowDir dir;
  TraceWindows windows(::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY), dir.path);
  std::string path;
  ASSERT_EQ(windows.open(std::chrono::seconds(60), false, path), "");
  windows.begin(session_info());
  const Record kernel = cudascope::profiler::make_device_record(RecordKind::kKernel, 0, 7, 1'000, 2'000, 1);
  windows.write(&kernel, 1);
  TraceSummary summary;
  summary.end_ns = 3'000;
  windows.end(summary);
  const nlohmann::json trace = read_json(path);
  ASSERT_FALSE(trace.is_discarded()) << path;
  EXPECT_EQ(trace["cudascope"].value("source", ""), "cupti");
  EXPECT_EQ(trace["cudascope"].value("activities", ""), "kernel,memcpy");
}

TEST(TraceWindowsTest, AWindowOfARecordingThatNeverBeganIsStillWholeJson) {
  const WindowDir dir;
  TraceWindows windows(::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY), dir.path);
  std::string path;
  ASSERT_EQ(windows.open(std::chrono::seconds(60), false, path), "");
  windows.end(TraceSummary{});
  EXPECT_FALSE(read_json(path).is_discarded()) << path;
  EXPECT_EQ(windows.open(std::chrono::seconds(1), false, path), "the recording has ended");
}

TEST(TraceWindowsTest, AWindowOpenedDuringTheSessionHasItsHeaderAtOnce) {
  const WindowDir dir;
  TraceWindows windows(::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY), dir.path);
  windows.begin(session_info());
  std::string path;
  ASSERT_EQ(windows.open(std::chrono::seconds(60), false, path), "");
  windows.end(TraceSummary{});
  const nlohmann::json trace = read_json(path);
  ASSERT_FALSE(trace.is_discarded()) << path;
  EXPECT_EQ(trace["cudascope"].value("source", ""), "cupti");
}

}  // namespace
