// The progress channel (inject/progress_channel.h): opened by the path in CUDASCOPE_PROGRESS
// only where it is a FIFO some reader holds, lines written whole, and a reader that is gone
// or stalled never stops or kills the writer.
#include "progress_channel.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace {

using cudascope::inject::open_progress_channel;
using cudascope::inject::write_progress_line;

class ProgressChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = (std::filesystem::temp_directory_path() / "progress_channel_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    fifo_ = dir_ + "/progress";
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override {
    unsetenv("CUDASCOPE_PROGRESS");
    std::filesystem::remove_all(dir_);
  }
  // The FIFO's read end, as `cudascope run` holds it.
  int open_reader() const { return open(fifo_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); }
  // The read end, then the write end a recorded process opens through CUDASCOPE_PROGRESS.
  std::pair<int, int> open_channel() const {
    const int reader = open_reader();
    setenv("CUDASCOPE_PROGRESS", fifo_.c_str(), 1);
    return {reader, open_progress_channel()};
  }
  std::string dir_, fifo_;
};

TEST_F(ProgressChannelTest, WithoutTheVariableThereIsNoChannel) {
  unsetenv("CUDASCOPE_PROGRESS");
  EXPECT_EQ(open_progress_channel(), -1);
  EXPECT_FALSE(write_progress_line(-1, "trace 1 t.json\n"));
}

TEST_F(ProgressChannelTest, AFifoNobodyReadsAndAPathThatIsNoFifoAreNoChannel) {
  setenv("CUDASCOPE_PROGRESS", fifo_.c_str(), 1);
  EXPECT_EQ(open_progress_channel(), -1) << "no reader: run has ended";
  const std::string file = dir_ + "/file";
  std::ofstream(file) << "x";
  setenv("CUDASCOPE_PROGRESS", file.c_str(), 1);
  EXPECT_EQ(open_progress_channel(), -1) << "a regular file is never written as the channel";
  std::ifstream in(file);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "x");
  setenv("CUDASCOPE_PROGRESS", (dir_ + "/missing").c_str(), 1);
  EXPECT_EQ(open_progress_channel(), -1);
}

TEST_F(ProgressChannelTest, LinesReachTheReaderWhole) {
  const auto [reader, writer] = open_channel();
  ASSERT_GE(reader, 0);
  ASSERT_GE(writer, 0);
  EXPECT_NE(fcntl(writer, F_GETFD) & FD_CLOEXEC, 0) << "a program's exec'd children open it themselves";
  EXPECT_TRUE(write_progress_line(writer, "trace 42 /t/r_0.json.gz\n"));
  EXPECT_TRUE(write_progress_line(writer, "10 0 42\n"));
  char buffer[256] = {};
  const ssize_t n = read(reader, buffer, sizeof buffer);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0), "trace 42 /t/r_0.json.gz\n10 0 42\n");
  close(writer);
  close(reader);
}

TEST_F(ProgressChannelTest, AReaderGoneFailsTheLineWithoutASigpipe) {
  const auto [reader, writer] = open_channel();
  ASSERT_GE(reader, 0);
  ASSERT_GE(writer, 0);
  close(reader);  // run ended; a worker it left running writes on
  // SIGPIPE's default action ends the process (whatever this test inherited); the write must
  // raise none that stays pending, and leave the thread's mask as it was.
  const auto previous_action = std::signal(SIGPIPE, SIG_DFL);
  sigset_t mask_before, mask_after, pending;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask_before);
  EXPECT_FALSE(write_progress_line(writer, "123 0 42\n"));
  pthread_sigmask(SIG_SETMASK, nullptr, &mask_after);
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
  EXPECT_EQ(sigismember(&mask_after, SIGPIPE), sigismember(&mask_before, SIGPIPE));
  std::signal(SIGPIPE, previous_action);
  close(writer);
}

TEST_F(ProgressChannelTest, AFullFifoDropsTheLineInsteadOfWaiting) {
  const auto [reader, writer] = open_channel();
  ASSERT_GE(reader, 0);
  ASSERT_GE(writer, 0);
  const std::string line(100, 'x');  // the reader holds the FIFO, never reads: run stopped
  int written = 0;
  while (write_progress_line(writer, line) && written < 100000) ++written;
  EXPECT_GT(written, 0);
  EXPECT_LT(written, 100000) << "the FIFO never filled";
  EXPECT_FALSE(write_progress_line(writer, line)) << "still full: dropped, not waited for";
  close(writer);
  close(reader);
}

TEST_F(ProgressChannelTest, ALineLongerThanPipeBufIsNotWrittenAtAll) {
  // Part of it could go, and the rest join another process's line.
  const auto [reader, writer] = open_channel();
  ASSERT_GE(reader, 0);
  ASSERT_GE(writer, 0);
  EXPECT_FALSE(write_progress_line(writer, "trace 42 /" + std::string(PIPE_BUF, 'd') + "\n"));
  char buffer[16];
  EXPECT_LE(read(reader, buffer, sizeof buffer), 0) << "nothing of it reached the reader";
  close(writer);
  close(reader);
}

}  // namespace
