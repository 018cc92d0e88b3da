#pragma once
// The one checked reading of each CUDASCOPE_* environment variable. Every place that reads
// one goes through these, so a value is taken as the user meant it or refused with a message
// naming the variable and the value: "CUDASCOPE_DELAY='inf' is not a number of seconds from
// 0 to 604800". Unset gives std::nullopt (the default applies); set, even to the empty
// string, is a value to check (CUDASCOPE_BACKEND='' is not a backend).
//
// Where the error goes is the caller's: `cudascope run` checks before it starts the program
// and exits; a library inside someone's process says so on stderr and does without the
// setting; the runtime raises its cuda::Error as for any bad argument.
//
// Thread-safety: as std::getenv (safe unless the environment is being changed).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cudascope::util {

// A variable set to a value that cannot be used; what() names both.
class EnvError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The value as set, or std::nullopt when unset.
std::optional<std::string> env_text(const char* name);
// One of `choices` ("a backend" names what they are in the message).
std::optional<std::string> env_choice(const char* name, const char* what, std::initializer_list<std::string_view> choices);
// 1, true, yes, on / 0, false, no, off.
std::optional<bool> env_flag(const char* name);
// A number of seconds in [0, max_seconds]: decimal, finite (never inf or nan).
std::optional<double> env_seconds(const char* name, double max_seconds);
// A whole number in [min, max], decimal digits only.
std::optional<std::uint64_t> env_count(const char* name, std::uint64_t min, std::uint64_t max);
// A whole number in [min, max], decimal digits with an optional leading '-'.
std::optional<std::int64_t> env_integer(const char* name, std::int64_t min, std::int64_t max);

// The same checks on a given text, for a value not (yet) in this process's environment.
// Throw EnvError naming `name` and `text`.
std::string parse_env_choice(const char* name, std::string_view text, const char* what,
                             std::initializer_list<std::string_view> choices);
bool parse_env_flag(const char* name, std::string_view text);
double parse_env_seconds(const char* name, std::string_view text, double max_seconds);
std::uint64_t parse_env_count(const char* name, std::string_view text, std::uint64_t min, std::uint64_t max);
std::int64_t parse_env_integer(const char* name, std::string_view text, std::int64_t min, std::int64_t max);

// "NAME='text'" with control characters escaped and a long value cut: how messages show it.
std::string env_shown(const char* name, std::string_view text);

// The variables read in one place and checked in another (`cudascope run` checks what the
// program it starts will read), each with its one rule:
std::optional<std::string> env_backend();           // CUDASCOPE_BACKEND: cuda, sim, auto
std::optional<std::uint64_t> env_sim_devices();     // CUDASCOPE_SIM_DEVICES: 1 to 64
std::optional<std::uint64_t> env_metrics_top();     // CUDASCOPE_METRICS_TOP: 0 to 1000
std::optional<bool> env_metrics_label_nvtx();       // CUDASCOPE_METRICS_LABEL_NVTX: a flag
std::optional<bool> env_cuda_sanitizer();           // CUDASCOPE_CUDA_SANITIZER: a flag
std::optional<bool> env_cupti_discard();            // CUDASCOPE_CUPTI_DISCARD: a flag
// CUPTI's own settings, to try against a CUPTI problem (docs/metrics.md): unset, CUPTI's default.
std::optional<bool> env_cupti_per_thread_buffers();  // CUDASCOPE_CUPTI_PER_THREAD_BUFFERS: a flag
std::optional<bool> env_cupti_periodic_flush();      // CUDASCOPE_CUPTI_PERIODIC_FLUSH: a flag
std::optional<std::string> env_clock();             // CUDASCOPE_CLOCK: tsc, monotonic
// Test settings (docs/ranks.md), read by the trace writer: every timestamp of this process's
// trace shifted by this many ns, -10^12 to 10^12 (a clock offset on purpose) ...
std::optional<std::int64_t> env_test_clock_offset_ns();  // CUDASCOPE_TEST_CLOCK_OFFSET_NS
// ... and the host its trace names (and %h in a trace path): 1 to 255 of [A-Za-z0-9._-].
std::optional<std::string> env_test_hostname();          // CUDASCOPE_TEST_HOSTNAME
// Checks each of those that is set: throws the EnvError of the first that cannot be used.
void check_environment();

}  // namespace cudascope::util
