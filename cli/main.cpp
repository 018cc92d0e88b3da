// The `cudascope` command: subcommands register themselves (command.h).
#include "command.h"

#include <cudascope/cuda.h>

#include <algorithm>
#include <cstdio>
#include <exception>
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
}  // namespace

void set_exit_code(int code) { exit_code = code; }

CommandRegistrar::CommandRegistrar(int order, CommandSetup setup) { registry().push_back({order, setup}); }

}  // namespace cudascope::cli

int main(int argc, char** argv) {
  using namespace cudascope;
  CLI::App app{"cudascope: observability and profiling around the CUDA runtime", "cudascope"};
  app.set_version_flag("--version", std::string("cudascope ") + kVersion);
  app.require_subcommand(1);
  auto& commands = cli::registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.order < b.order; });
  for (const auto& command : commands) command.setup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: error: %s\n", e.what());
    return 1;
  }
  return cli::exit_code;
}
