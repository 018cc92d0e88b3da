// `cudascope metrics` and `cudascope serve`: bad flags and missing devices are errors found
// before any work, naming the flag and the value, with a non-zero exit.
#include "test_support.h"

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the CLI with `args` (and `environment` "K=V ..." before it); bounded by timeout(1).
Outcome cli(const std::string& args, const std::string& environment = "CUDASCOPE_BACKEND=sim") {
  const std::string command =
      "env " + environment + " timeout 20 " + std::string(CUDASCOPE_CLI_PATH) + " " + args + " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) outcome.output.append(buffer, n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

}  // namespace

TEST(MetricsCliTest, ServeRejectsABindThatIsNotAnAddress) {
  const Outcome o = cli("serve --bind nonsense");
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.exit_code, 124) << "it served instead of failing";
  EXPECT_THAT(o.output, ::testing::HasSubstr("--bind"));
  EXPECT_THAT(o.output, ::testing::HasSubstr("nonsense"));
}

TEST(MetricsCliTest, ServeRejectsADeviceOutOfRangeBeforeServing) {
  const Outcome o = cli("serve --bind 127.0.0.1:0 --device 7", "CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_DEVICES=2");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, ::testing::HasSubstr("--device"));
  EXPECT_THAT(o.output, ::testing::HasSubstr("device 7"));
  EXPECT_THAT(o.output, ::testing::HasSubstr("2 device(s)"));
}

TEST(MetricsCliTest, MetricsRejectsANegativeDevice) {
  const Outcome o = cli("metrics --device -1");
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, ::testing::HasSubstr("--device"));
  EXPECT_THAT(o.output, ::testing::HasSubstr("-1"));
  EXPECT_THAT(o.output, ::testing::Not(::testing::HasSubstr("device=\"-1\"")));
}

TEST(MetricsCliTest, MetricsRejectsAnUnknownBackend) {
  const Outcome o = cli("metrics", "CUDASCOPE_BACKEND=foo");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, ::testing::HasSubstr("CUDASCOPE_BACKEND"));
  EXPECT_THAT(o.output, ::testing::HasSubstr("foo"));
}

TEST(MetricsCliTest, MetricsWithoutADeviceIsAnError) {
  if (std::system("test -e /dev/nvidia0") == 0) GTEST_SKIP() << "this machine has a GPU: the cuda backend finds a device";
  const Outcome o = cli("metrics", "CUDASCOPE_BACKEND=cuda");
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, ::testing::HasSubstr("no device"));
}

TEST(MetricsCliTest, ServeListensOnLoopbackByDefault) {
  const Outcome o = cli("serve --help");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_THAT(o.output, ::testing::HasSubstr("--bind TEXT=127.0.0.1:9400"));
}

TEST(MetricsCliTest, MetricsPrintsTheExposition) {
  const Outcome o = cli("metrics --device 1 --job nightly");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, ::testing::HasSubstr("cudascope_device_info{device=\"1\""));
  EXPECT_THAT(o.output, ::testing::HasSubstr("job=\"nightly\""));
  EXPECT_THAT(o.output, ::testing::Not(::testing::HasSubstr("device=\"0\"")));
}
