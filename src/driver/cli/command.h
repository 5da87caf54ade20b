// Subcommand registry of the `steptp` driver. Each src/driver/cli/*_cmd.cc defines one subcommand and
// registers it with a file-scope `RegisterCommand` named after the command (`print_cmd`: the
// sources are compiled together in unity batches, src/CMakeLists.txt, where one name per file
// would clash); main.cc builds the CLI11 app from the registry, so adding a command touches no
// shared file.
//
// Exit codes, for every command: 0 success, 1 invalid input / negative answer (as documented per
// command), 2 usage error or invalid input where 1 means "not equivalent" (verify).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace steptp::cli {

struct Command {
  std::string name;
  std::string help;
  // Adds the subcommand's options to `sub` and returns the action to run after parsing.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

struct RegisterCommand {
  explicit RegisterCommand(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace steptp::cli
