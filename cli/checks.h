#pragma once
// Checks a command makes before it does any work, so a bad flag, path or environment
// variable fails at once with a message naming it, never after a run or as a device error.

#include <cudascope/cuda/error.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::cli {

// A CLI11 validator: the value is a finite number from `min` to `max` (inclusive), written
// the way a user would ("1000", "0.5"). NaN and infinities are rejected, which CLI::Range
// lets through. `unit` ("ms", "s", "bytes") is only for the message and the help text.
CLI::Validator FiniteRange(double min, double max, const std::string& unit = {});

// Why `path` cannot be written as an output file, or empty when it can. The directory must
// exist and accept a new file (tried by creating and removing one, so a read-only mount or
// a root-only directory is caught too); an existing file must be a regular file open for
// writing (a link is followed: a link to /dev/full is refused), and not a kernel interface
// (/proc/version, a sysfs attribute: regular files to stat, whose writes fail or mean
// something else). Nothing is left behind and an existing file is not changed.
std::string output_file_problem(const std::string& path);

// Throws CLI::ValidationError (a usage error, exit 2) when the output `path` given with
// `flag` is the same file as one of `inputs` (by device and inode, so through links and
// other names too): writing it would destroy what is to be read. Call before any work.
// "-" and outputs that do not exist yet pass.
void refuse_output_over_inputs(const std::string& flag, const std::string& path, const std::vector<std::string>& inputs);

// A CLI11 validator: a non-negative decimal integer up to `max` ("-1", "", "1e3" and values
// past `max` or 2^64 are refused, which CLI11's own conversion to size_t lets through).
CLI::Validator CountUpTo(std::uint64_t max);

// A cuda::Error's own words, without the code, call, file and line meant for device errors:
// what a user is told of a bad input file or setting.
std::string error_detail(const cuda::Error& e);

// A CLI11 validator: a process id, a decimal integer from 1 to INT_MAX. Refused values are
// told as "0 is not a process id (a positive integer)", never as CLI11's range of doubles or
// its "Could not convert" for a number past int.
CLI::Validator ProcessId();

// A CLI11 validator: a byte size above zero as util::parse_byte_size reads it (40GiB, 512MiB,
// 1048576); an empty value is refused rather than read as "not given".
CLI::Validator PositiveByteSize();

// A CLI11 validator: ADDRESS:PORT with a port from 0 to 65535 written in digits
// (127.0.0.1:9401, [::1]:9401, localhost:0). Whether it can be listened on is checked later.
CLI::Validator ListenAddress();

// A CLI11 validator applying output_file_problem; "-" (stdout) passes when `allow_stdout`.
CLI::Validator WritableFile(bool allow_stdout = false);

// A CLI11 validator for where cuda::memory::dump_snapshot is to write: a name it knows the
// format of (.pickle, .pkl or .json, optionally followed by .gz) that can be written. Said
// before the work whose snapshot it is, rather than after it.
CLI::Validator SnapshotFile();

// Throws std::runtime_error naming CUDASCOPE_BACKEND and its value when it is set to
// something other than cuda, sim or auto. It reads only the variable, so a wrapper such as
// `cudascope run` can check it without initialising a device before it forks.
void check_backend_variable();

}  // namespace cudascope::cli
