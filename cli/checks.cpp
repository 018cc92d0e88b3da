#include "checks.h"

#include <cudascope/util/byte_format.h>
#include <cudascope/util/env_value.h>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
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

// The kernel file system `path` is on when that is one of its interfaces (procfs, sysfs and
// the like), else null. Their files stat as regular files, and root may even open them for
// writing, but a trace written there fails (ESPIPE, EINVAL) or changes a kernel setting.
const char* kernel_file_system(const std::string& path) {
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) != 0) return nullptr;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC: return "procfs";
    case SYSFS_MAGIC: return "sysfs";
    case DEBUGFS_MAGIC: return "debugfs";
    case TRACEFS_MAGIC: return "tracefs";
    case CGROUP_SUPER_MAGIC: return "cgroupfs";
    case CGROUP2_SUPER_MAGIC: return "cgroup2fs";
    case SECURITYFS_MAGIC: return "securityfs";
    case EFIVARFS_MAGIC: return "efivarfs";
    default: return nullptr;
  }
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
  // Runs started together in one directory (a job's ranks, a sweep) check the same name at
  // once: one's probe may appear or vanish between another's looks, so a look the name
  // changed under is taken again.
  for (int look = 0; look < 100; ++look) {
    const fs::file_status status = fs::status(file, error);
    if (fs::is_directory(status)) return "cannot write " + path + ": it is a directory";
    if (fs::exists(status)) {
      // A device, a pipe or a socket: a write error there (/dev/full) would come after the work.
      if (!fs::is_regular_file(status)) return "cannot write " + path + ": not a regular file";
      if (const char* kernel = kernel_file_system(path)) {
        return "cannot write " + path + ": not a regular file (a kernel interface on " + kernel + ")";
      }
      // Open without truncating: the check must not change a file it may then leave alone.
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 && errno == ENOENT) continue;
      if (fd < 0) return "cannot write " + path + ": " + std::strerror(errno);
      close(fd);
      return {};
    }
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return "cannot create " + path + ": " + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return {};
  }
  return {};  // the name kept changing under others' probes: the directory takes files
}

CLI::Validator WritableFile(bool allow_stdout) {
  return CLI::Validator(
      [allow_stdout](std::string& path) -> std::string {
        if (allow_stdout && path == "-") return {};
        return output_file_problem(path);
      },
      "FILE (writable)", "WRITABLE_FILE");
}

CLI::Validator SnapshotFile() {
  const auto name_problem = [](std::string& path) -> std::string {
    std::string name = path;
    if (name.ends_with(".gz")) name.resize(name.size() - 3);
    for (const char* extension : {".json", ".pickle", ".pkl"}) {
      if (name.size() > std::strlen(extension) && name.ends_with(extension)) return {};
    }
    return "'" + path + "' must end in .pickle, .pkl or .json (optionally followed by .gz)";
  };
  return CLI::Validator(name_problem, "FILE", "SNAPSHOT_NAME") & WritableFile();
}

void refuse_output_over_inputs(const std::string& flag, const std::string& path, const std::vector<std::string>& inputs) {
  struct stat output {};
  if (path.empty() || path == "-" || stat(path.c_str(), &output) != 0) return;
  for (const std::string& input : inputs) {
    struct stat in {};
    if (input.empty() || stat(input.c_str(), &in) != 0) continue;
    if (in.st_dev == output.st_dev && in.st_ino == output.st_ino) {
      throw CLI::ValidationError(flag, "'" + path + "' is the input " + input +
                                           (input == path ? "" : " (the same file)") +
                                           ": writing it would destroy what is to be read; choose another file");
    }
  }
}

CLI::Validator CountUpTo(std::uint64_t max) {
  const std::string range = "0 to " + std::to_string(max);
  return CLI::Validator(
      [max, range](std::string& input) -> std::string {
        const bool digits = !input.empty() && input.size() <= 20 &&
                            input.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        const unsigned long long value = digits ? std::strtoull(input.c_str(), nullptr, 10) : 0;
        if (!digits || errno == ERANGE) return "'" + input + "' is not a whole number from " + range;
        if (value > max) return "'" + input + "' is out of range (expected " + range + ")";
        return {};
      },
      "INT in " + range, "COUNT");
}

std::string error_detail(const cuda::Error& e) {
  const std::string text = e.what();
  const std::string where = std::string(e.file()) + ":" + std::to_string(e.line()) + ": ";
  const std::size_t at = text.find(where);
  return at == std::string::npos ? text : text.substr(at + where.size());
}

CLI::Validator ProcessId() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const bool digits = !input.empty() && input.size() <= 10 && input.find_first_not_of("0123456789") == std::string::npos;
        const unsigned long long value = digits ? std::strtoull(input.c_str(), nullptr, 10) : 0;
        if (value == 0 || value > static_cast<unsigned long long>(INT_MAX)) {
          return (input.empty() ? "''" : input) + " is not a process id (a positive integer)";
        }
        return {};
      },
      "PID", "PROCESS_ID");
}

CLI::Validator PositiveByteSize() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        std::uint64_t bytes = 0;
        if (!util::parse_byte_size(input, bytes)) return "'" + input + "' is not a byte size (e.g. 40GiB, 512MiB)";
        if (bytes == 0) return "'" + input + "' is zero bytes";
        return {};
      },
      "SIZE (e.g. 40GiB)", "BYTE_SIZE");
}

CLI::Validator ListenAddress() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const std::size_t colon = input.rfind(':');
        const std::string expected = " (expected ADDRESS:PORT, e.g. 127.0.0.1:9401)";
        if (colon == std::string::npos) return "'" + input + "': no port" + expected;
        const std::string port = input.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
            std::stoul(port) > 65535) {
          return "'" + input + "': port '" + port + "' is not a number from 0 to 65535" + expected;
        }
        if (colon == 0) return "'" + input + "': no address" + expected;
        return {};
      },
      "ADDRESS:PORT", "LISTEN_ADDRESS");
}

void check_backend_variable() {
  try {
    cudascope::util::env_backend();
  } catch (const cudascope::util::EnvError& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace cudascope::cli
