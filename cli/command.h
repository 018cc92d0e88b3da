#pragma once
// Subcommands register themselves: each cmd_<name>.cpp defines one
//   CUDASCOPE_COMMAND(name, order) { CLI::App* sub = app.add_subcommand(...); ... }
// and the cli/CMakeLists.txt lists the file. The body adds a subcommand to `app` and
// sets its callback, which passes the process exit code to set_exit_code.
//
// Exit codes: a command line that cannot be run as written is a usage error, exit 2, told
// with a pointer to --help: CLI11's own parse errors, a validator's refusal, and what a
// callback finds wrong with its flags before any work (a value that needs a look at the
// system, a flag that needs another), which it throws as CLI::ValidationError. Any other
// exception is a failure of the work, exit 1.

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
