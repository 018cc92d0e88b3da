#pragma once
// Checks a command makes before it does any work, so a bad flag, path or environment
// variable fails at once with a message naming it, never after a run or as a device error.

#include <CLI/CLI.hpp>

#include <string>

namespace cudascope::cli {

// A CLI11 validator: the value is a finite number from `min` to `max` (inclusive), written
// the way a user would ("1000", "0.5"). NaN and infinities are rejected, which CLI::Range
// lets through. `unit` ("ms", "s", "bytes") is only for the message and the help text.
CLI::Validator FiniteRange(double min, double max, const std::string& unit = {});

// Why `path` cannot be written as an output file, or empty when it can. The directory must
// exist and accept a new file (tried by creating and removing one, so a read-only mount or
// a root-only directory is caught too); an existing file must be a regular file open for
// writing. Nothing is left behind and an existing file is not changed.
std::string output_file_problem(const std::string& path);

// A CLI11 validator applying output_file_problem; "-" (stdout) passes when `allow_stdout`.
CLI::Validator WritableFile(bool allow_stdout = false);

// Throws std::runtime_error naming CUDASCOPE_BACKEND and its value when it is set to
// something other than cuda, sim or auto. It reads only the variable, so a wrapper such as
// `cudascope run` can check it without initialising a device before it forks.
void check_backend_variable();

}  // namespace cudascope::cli
