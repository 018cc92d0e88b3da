#pragma once
// Runs the built `cudascope` command as a user would, through the shell.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace cudascope::testing {

struct CliResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, collecting what it prints on stdout and stderr.
inline CliResult run_shell(const std::string& command_line) {
  const std::string command = "(" + command_line + ") 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  CliResult result{-1, {}};
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// `environment` goes before the command ("CUDASCOPE_BACKEND=sim", "cd /tmp &&" or empty).
inline CliResult run_cli(const std::string& environment, const std::string& arguments) {
  return run_shell(environment + " " + CUDASCOPE_CLI_PATH + " " + arguments);
}

// A file's bytes as they are (binary), and a file made of `bytes`: inputs cut or edited.
inline std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void put_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace cudascope::testing
