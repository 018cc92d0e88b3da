#include <cudascope/util/env_value.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cudascope::util {
namespace {

[[noreturn]] void refuse(const char* name, std::string_view text, const std::string& expected) {
  throw EnvError(env_shown(name, text) + " is not " + expected);
}

std::string number_text(double value) {
  char out[32];
  std::snprintf(out, sizeof out, "%.15g", value);
  return out;
}

}  // namespace

std::string env_shown(const char* name, std::string_view text) {
  std::string out = std::string(name) + "='";
  const std::size_t shown = std::min<std::size_t>(text.size(), 200);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < text.size()) out += "...";
  return out + "'";
}

std::optional<std::string> env_text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string parse_env_choice(const char* name, std::string_view text, const char* what,
                             std::initializer_list<std::string_view> choices) {
  std::string valid;
  for (std::string_view choice : choices) {
    if (text == choice) return std::string(text);
    valid += (valid.empty() ? "" : ", ") + std::string(choice);
  }
  refuse(name, text, std::string(what) + "; valid: " + valid);
}

bool parse_env_flag(const char* name, std::string_view text) {
  for (std::string_view yes : {"1", "true", "yes", "on"}) {
    if (text == yes) return true;
  }
  for (std::string_view no : {"0", "false", "no", "off"}) {
    if (text == no) return false;
  }
  refuse(name, text, "1 or 0 (true/false, yes/no, on/off)");
}

double parse_env_seconds(const char* name, std::string_view text, double max_seconds) {
  const std::string expected = "a number of seconds from 0 to " + number_text(max_seconds);
  // Digits, one point, an exponent: no "inf", "nan", hex floats or leading blanks.
  const bool plain = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string_view::npos &&
                     (std::isdigit(static_cast<unsigned char>(text.front())) != 0 || text.front() == '.');
  if (!plain) refuse(name, text, expected);
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(copy.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value) || !(value >= 0 && value <= max_seconds)) {
    refuse(name, text, expected);
  }
  return value;
}

namespace {
// The value of 1 to 20 decimal digits; nothing when `digits` is not that or passes 2^64 - 1.
std::optional<std::uint64_t> decimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 20 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  for (const char c : digits) {
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}
}  // namespace

std::uint64_t parse_env_count(const char* name, std::string_view text, std::uint64_t min, std::uint64_t max) {
  const std::optional<std::uint64_t> value = decimal(text);
  if (!value || *value < min || *value > max) {
    refuse(name, text, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return *value;
}

std::int64_t parse_env_integer(const char* name, std::string_view text, std::int64_t min, std::int64_t max) {
  const bool negative = !text.empty() && text.front() == '-';
  const std::optional<std::uint64_t> magnitude = decimal(negative ? text.substr(1) : text);
  constexpr auto kLargest = static_cast<std::uint64_t>(INT64_MAX);
  std::optional<std::int64_t> value;
  if (magnitude && !negative && *magnitude <= kLargest) value = static_cast<std::int64_t>(*magnitude);
  if (magnitude && negative && *magnitude <= kLargest + 1) value = -static_cast<std::int64_t>(*magnitude - 1) - 1;
  if (!value || *value < min || *value > max) {
    refuse(name, text, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return *value;
}

std::optional<std::string> env_choice(const char* name, const char* what, std::initializer_list<std::string_view> choices) {
  const std::optional<std::string> text = env_text(name);
  if (!text) return std::nullopt;
  return parse_env_choice(name, *text, what, choices);
}

std::optional<bool> env_flag(const char* name) {
  const std::optional<std::string> text = env_text(name);
  if (!text) return std::nullopt;
  return parse_env_flag(name, *text);
}

std::optional<double> env_seconds(const char* name, double max_seconds) {
  const std::optional<std::string> text = env_text(name);
  if (!text) return std::nullopt;
  return parse_env_seconds(name, *text, max_seconds);
}

std::optional<std::uint64_t> env_count(const char* name, std::uint64_t min, std::uint64_t max) {
  const std::optional<std::string> text = env_text(name);
  if (!text) return std::nullopt;
  return parse_env_count(name, *text, min, max);
}

std::optional<std::int64_t> env_integer(const char* name, std::int64_t min, std::int64_t max) {
  const std::optional<std::string> text = env_text(name);
  if (!text) return std::nullopt;
  return parse_env_integer(name, *text, min, max);
}

std::optional<std::string> env_backend() { return env_choice("CUDASCOPE_BACKEND", "a backend", {"cuda", "sim", "auto"}); }
std::optional<std::uint64_t> env_sim_devices() { return env_count("CUDASCOPE_SIM_DEVICES", 1, 64); }
std::optional<std::uint64_t> env_metrics_top() { return env_count("CUDASCOPE_METRICS_TOP", 0, 1000); }
std::optional<bool> env_metrics_label_nvtx() { return env_flag("CUDASCOPE_METRICS_LABEL_NVTX"); }
std::optional<bool> env_cuda_sanitizer() { return env_flag("CUDASCOPE_CUDA_SANITIZER"); }
std::optional<bool> env_cupti_discard() { return env_flag("CUDASCOPE_CUPTI_DISCARD"); }
std::optional<bool> env_cupti_per_thread_buffers() { return env_flag("CUDASCOPE_CUPTI_PER_THREAD_BUFFERS"); }
std::optional<bool> env_cupti_periodic_flush() { return env_flag("CUDASCOPE_CUPTI_PERIODIC_FLUSH"); }
std::optional<std::string> env_clock() { return env_choice("CUDASCOPE_CLOCK", "a clock", {"tsc", "monotonic"}); }
std::optional<std::int64_t> env_test_clock_offset_ns() {
  return env_integer("CUDASCOPE_TEST_CLOCK_OFFSET_NS", -1'000'000'000'000, 1'000'000'000'000);
}
std::optional<std::string> env_test_hostname() {
  const std::optional<std::string> text = env_text("CUDASCOPE_TEST_HOSTNAME");
  if (!text) return std::nullopt;
  const bool valid = !text->empty() && text->size() <= 255 &&
                     std::all_of(text->begin(), text->end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
                     });
  if (!valid) refuse("CUDASCOPE_TEST_HOSTNAME", *text, "a host name: 1 to 255 letters, digits, '.', '-' or '_'");
  return text;
}

void check_environment() {
  env_backend();
  env_sim_devices();
  env_metrics_top();
  env_metrics_label_nvtx();
  env_cuda_sanitizer();
  env_cupti_discard();
  env_cupti_per_thread_buffers();
  env_cupti_periodic_flush();
  env_clock();
  env_test_clock_offset_ns();
  env_test_hostname();
}

}  // namespace cudascope::util
