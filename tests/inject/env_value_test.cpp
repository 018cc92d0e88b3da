// One checked parser per CUDASCOPE_* variable (issue 25): a value is taken as meant or refused
// with a message naming the variable and the value; never read as something else.
#include <cudascope/util/env_value.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

using namespace cudascope::util;
using ::testing::HasSubstr;

namespace {

std::string refusal(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const EnvError& e) {
    return e.what();
  }
  return "(accepted)";
}

constexpr double kWeek = 7 * 24 * 3600;

}  // namespace

TEST(EnvValueTest, SecondsRefuseInfinityNanAndOutOfRange) {
  for (const char* text : {"inf", "INF", "infinity", "nan", "-nan", "1e19", "-1", "", " 1", "1s", "0x10", "1e400"}) {
    EXPECT_THAT(refusal([&] { parse_env_seconds("CUDASCOPE_DURATION", text, kWeek); }),
                HasSubstr(std::string("CUDASCOPE_DURATION='") + text + "' is not a number of seconds from 0 to 604800"))
        << text;
  }
  EXPECT_DOUBLE_EQ(parse_env_seconds("CUDASCOPE_DELAY", "2.5", kWeek), 2.5);
  EXPECT_DOUBLE_EQ(parse_env_seconds("CUDASCOPE_DELAY", "0", kWeek), 0.0);
  EXPECT_DOUBLE_EQ(parse_env_seconds("CUDASCOPE_DELAY", "1e3", kWeek), 1000.0);
}

TEST(EnvValueTest, FlagsTakeOnlyYesOrNo) {
  EXPECT_TRUE(parse_env_flag("CUDASCOPE_NO_TRACE", "1"));
  EXPECT_TRUE(parse_env_flag("CUDASCOPE_NO_TRACE", "true"));
  EXPECT_FALSE(parse_env_flag("CUDASCOPE_NO_TRACE", "0"));
  EXPECT_FALSE(parse_env_flag("CUDASCOPE_NO_TRACE", "off"));
  for (const char* text : {"x", "", "2", "TRUE "}) {
    EXPECT_THAT(refusal([&] { parse_env_flag("CUDASCOPE_NO_TRACE", text); }),
                HasSubstr(std::string("CUDASCOPE_NO_TRACE='") + text + "' is not 1 or 0"));
  }
}

TEST(EnvValueTest, EmptyBackendIsNotCuda) {
  setenv("CUDASCOPE_BACKEND", "", 1);
  EXPECT_THAT(refusal([] { env_backend(); }), HasSubstr("CUDASCOPE_BACKEND='' is not a backend; valid: cuda, sim, auto"));
  setenv("CUDASCOPE_BACKEND", "sim", 1);
  EXPECT_EQ(env_backend().value_or(""), "sim");
  unsetenv("CUDASCOPE_BACKEND");
  EXPECT_FALSE(env_backend().has_value());
}

TEST(EnvValueTest, CountsAreDecimalWithinTheirRange) {
  EXPECT_EQ(parse_env_count("CUDASCOPE_SIM_DEVICES", "4", 1, 64), 4u);
  for (const char* text : {"0", "65", "-1", "4x", "", "18446744073709551616", "+4"}) {
    EXPECT_THAT(refusal([&] { parse_env_count("CUDASCOPE_SIM_DEVICES", text, 1, 64); }),
                HasSubstr(std::string("CUDASCOPE_SIM_DEVICES='") + text + "' is not a whole number from 1 to 64"));
  }
  // The whole unsigned range.
  EXPECT_EQ(parse_env_count("CUDASCOPE_CUPTI_BUFFER", "18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
}

TEST(EnvValueTest, SignedIntegersAreDecimalWithinTheirRange) {
  EXPECT_EQ(parse_env_integer("CUDASCOPE_TEST_CLOCK_OFFSET_NS", "-7000000", -10'000'000, 10'000'000), -7000000);
  EXPECT_EQ(parse_env_integer("CUDASCOPE_TEST_CLOCK_OFFSET_NS", "7000000", -10'000'000, 10'000'000), 7000000);
  for (const char* text : {"-", "", "7ms", "+7", "1e6", "10000001", "-10000001", "99999999999999999999"}) {
    EXPECT_THAT(refusal([&] { parse_env_integer("CUDASCOPE_TEST_CLOCK_OFFSET_NS", text, -10'000'000, 10'000'000); }),
                HasSubstr(std::string("CUDASCOPE_TEST_CLOCK_OFFSET_NS='") + text +
                          "' is not a whole number from -10000000 to 10000000"));
  }
  // The ends of the signed range, and one past each.
  EXPECT_EQ(parse_env_integer("N", "9223372036854775807", INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(parse_env_integer("N", "-9223372036854775808", INT64_MIN, INT64_MAX), INT64_MIN);
  for (const char* text : {"9223372036854775808", "-9223372036854775809"}) {
    EXPECT_THAT(refusal([&] { parse_env_integer("N", text, INT64_MIN, INT64_MAX); }),
                HasSubstr(std::string("N='") + text + "' is not a whole number"));
  }
}

TEST(EnvValueTest, TestSettingsAreCheckedWithTheRest) {
  setenv("CUDASCOPE_TEST_CLOCK_OFFSET_NS", "-7000000", 1);
  setenv("CUDASCOPE_TEST_HOSTNAME", "fake-host-1", 1);
  EXPECT_EQ(env_test_clock_offset_ns(), -7000000);
  EXPECT_EQ(env_test_hostname(), "fake-host-1");
  EXPECT_EQ(refusal([] { check_environment(); }), "(accepted)");
  setenv("CUDASCOPE_TEST_HOSTNAME", "a b", 1);
  EXPECT_THAT(refusal([] { check_environment(); }), HasSubstr("CUDASCOPE_TEST_HOSTNAME='a b' is not a host name"));
  unsetenv("CUDASCOPE_TEST_HOSTNAME");
  unsetenv("CUDASCOPE_TEST_CLOCK_OFFSET_NS");
  EXPECT_EQ(env_test_clock_offset_ns(), std::nullopt);
}

TEST(EnvValueTest, MessagesShowControlCharactersEscaped) {
  EXPECT_EQ(env_shown("CUDASCOPE_JOB", "a\nb"), "CUDASCOPE_JOB='a\\x0ab'");
}

TEST(EnvValueTest, CheckEnvironmentNamesTheFirstBadVariable) {
  setenv("CUDASCOPE_METRICS_TOP", "lots", 1);
  EXPECT_THAT(refusal([] { check_environment(); }), HasSubstr("CUDASCOPE_METRICS_TOP='lots'"));
  unsetenv("CUDASCOPE_METRICS_TOP");
  EXPECT_EQ(refusal([] { check_environment(); }), "(accepted)");
}

// CUPTI's settings: flags, checked with the rest before a program starts.
TEST(EnvValueTest, CuptiSettingsAreFlagsCheckedWithTheRest) {
  EXPECT_EQ(env_cupti_per_thread_buffers(), std::nullopt);
  setenv("CUDASCOPE_CUPTI_PER_THREAD_BUFFERS", "0", 1);
  setenv("CUDASCOPE_CUPTI_PERIODIC_FLUSH", "1", 1);
  EXPECT_EQ(env_cupti_per_thread_buffers(), false);
  EXPECT_EQ(env_cupti_periodic_flush(), true);
  EXPECT_EQ(refusal([] { check_environment(); }), "(accepted)");
  setenv("CUDASCOPE_CUPTI_PERIODIC_FLUSH", "sometimes", 1);
  EXPECT_THAT(refusal([] { check_environment(); }), HasSubstr("CUDASCOPE_CUPTI_PERIODIC_FLUSH='sometimes'"));
  unsetenv("CUDASCOPE_CUPTI_PERIODIC_FLUSH");
  unsetenv("CUDASCOPE_CUPTI_PER_THREAD_BUFFERS");
}
