#pragma once
// Subcommands register themselves: each cmd_<name>.cpp defines one
//   CUDASCOPE_COMMAND(name, order) { CLI::App* sub = app.add_subcommand(...); ... }
// and the cli/CMakeLists.txt lists the file. The body adds a subcommand to `app` and
// sets its callback; the callback's return value is the process exit code.

#include <CLI/CLI.hpp>

#include <functional>

namespace cudascope::cli {

// Set by a subcommand's callback: the exit code main() returns.
void set_exit_code(int code);

using CommandSetup = void (*)(CLI::App& app);
struct CommandRegistrar {
  CommandRegistrar(int order, CommandSetup setup);
};

}  // namespace cudascope::cli

#define CUDASCOPE_COMMAND(name, order)                                                       \
  static void cudascope_setup_##name(CLI::App& app);                                        \
  static const ::cudascope::cli::CommandRegistrar cudascope_registrar_##name{order,          \
                                                                              &cudascope_setup_##name}; \
  static void cudascope_setup_##name(CLI::App& app)
