#include "checks.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace cudascope::cli {
namespace {

// %g keeps limits readable: "1000", "0.5", "6.048e+05" rather than 300-digit doubles.
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string with_unit(const std::string& number, const std::string& unit) {
  return unit.empty() ? number : number + " " + unit;
}

}  // namespace

CLI::Validator FiniteRange(double min, double max, const std::string& unit) {
  const std::string range = number_text(min) + " to " + with_unit(number_text(max), unit);
  return CLI::Validator(
      [min, max, range](std::string& input) -> std::string {
        const char* text = input.c_str();
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text, &end);
        if (end == text || *end != '\0' || errno == ERANGE || !std::isfinite(value)) {
          return "'" + input + "' is not a finite number (expected " + range + ")";
        }
        if (value < min || value > max) return "'" + input + "' is out of range (expected " + range + ")";
        return {};
      },
      "NUMBER in " + range, "FINITE_RANGE");
}

std::string output_file_problem(const std::string& path) {
  if (path.empty()) return "empty file name";
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path file(path);
  const fs::path parent = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const fs::file_status parent_status = fs::status(parent, error);
  if (!fs::exists(parent_status)) return "cannot write " + path + ": directory " + parent.string() + " does not exist";
  if (!fs::is_directory(parent_status)) return "cannot write " + path + ": " + parent.string() + " is not a directory";
  const fs::file_status status = fs::status(file, error);
  if (fs::is_directory(status)) return "cannot write " + path + ": it is a directory";
  if (fs::exists(status)) {
    // Open without truncating: the check must not change a file it may then leave alone.
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return "cannot write " + path + ": " + std::strerror(errno);
    close(fd);
    return {};
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
  close(fd);
  unlink(path.c_str());
  return {};
}

CLI::Validator WritableFile(bool allow_stdout) {
  return CLI::Validator(
      [allow_stdout](std::string& path) -> std::string {
        if (allow_stdout && path == "-") return {};
        return output_file_problem(path);
      },
      "FILE (writable)", "WRITABLE_FILE");
}

void check_backend_variable() {
  const char* value = std::getenv("CUDASCOPE_BACKEND");
  if (value == nullptr || *value == '\0') return;
  const std::string choice = value;
  if (choice == "cuda" || choice == "sim" || choice == "auto") return;
  throw std::runtime_error("CUDASCOPE_BACKEND='" + choice + "' is not a backend; valid: cuda, sim, auto");
}

}  // namespace cudascope::cli
