// The `cudascope` command: subcommands register themselves (command.h).
#include "command.h"

#include <cudascope/cuda.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace cudascope::cli {
namespace {
struct Registered {
  int order;
  CommandSetup setup;
};
std::vector<Registered>& registry() {
  static std::vector<Registered> commands;
  return commands;
}
int exit_code = 0;

// The exit status of a command line that cannot be run as written (as getopt tools use).
constexpr int kUsageError = 2;

std::string command_list(const CLI::App& app) {
  std::string list;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  return list;
}

// The first argument must be a command or one of the few options that come before one.
// CLI11 alone answers a missing, unknown or misspelt command with "A subcommand is required".
std::string first_argument_problem(const CLI::App& app, int argc, char** argv) {
  const std::string commands = "; commands: " + command_list(app) + " (cudascope --help describes them)";
  if (argc < 2) return "no command given" + commands;
  const std::string first = argv[1];
  if (first == "-h" || first == "--help" || first == "--version") return {};
  if (first.rfind('-', 0) == 0) return "unknown option '" + first + "' (before a command only --help and --version)" + commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->check_name(first)) return {};
  }
  return "unknown command '" + first + "'" + commands;
}

// Everything a command printed reaches stdout here or the run fails: a full disk or
// /dev/full behind stdout is a non-zero exit, never output silently lost.
int with_stdout_written(int code, const std::string& prefix) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int why = errno;
  if (flushed && !std::ferror(stdout)) return code;
  std::fprintf(stderr, "%s: error: cannot write standard output: %s\n", prefix.c_str(),
               why != 0 ? std::strerror(why) : "an earlier write to it failed");
  return code == 0 ? 1 : code;
}

}  // namespace

void set_exit_code(int code) { exit_code = code; }

CommandRegistrar::CommandRegistrar(int order, CommandSetup setup) { registry().push_back({order, setup}); }

}  // namespace cudascope::cli

int main(int argc, char** argv) {
  using namespace cudascope;
  CLI::App app{"cudascope: observability and profiling around the CUDA runtime", "cudascope"};
  app.set_version_flag("--version", std::string("cudascope ") + kVersion);
  app.require_subcommand(0, 1);  // a missing or unknown command gets first_argument_problem's message
  auto& commands = cli::registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (const auto& command : commands) command.setup(app);

  if (const std::string problem = cli::first_argument_problem(app, argc, argv); !problem.empty()) {
    std::fprintf(stderr, "cudascope: error: %s\n", problem.c_str());
    return cli::kUsageError;
  }
  // Errors name the command they come from: "cudascope demo: error: ...".
  const std::string prefix = argc > 1 && argv[1][0] != '-' ? std::string("cudascope ") + argv[1] : "cudascope";
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli::with_stdout_written(app.exit(e), prefix);  // --help, --version
    std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for the options.\n", prefix.c_str(), e.what(), prefix.c_str());
    return cli::kUsageError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", prefix.c_str(), e.what());
    return cli::with_stdout_written(1, prefix);
  }
  return cli::with_stdout_written(cli::exit_code, prefix);
}
