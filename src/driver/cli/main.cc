// The `steptp` driver: dispatches to the registered subcommands; an error's exit code is its
// kind's (base/error.h, the table serve's statuses come from too).
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "base/error.h"
#include "driver/cli/command.h"
#include "ir/leir/diagnostic.h"

namespace steptp::cli {
std::vector<Command>& command_registry() {
  static std::vector<Command> registry;
  return registry;
}
}  // namespace steptp::cli

int main(int argc, char** argv) {
  using namespace steptp::cli;
  CLI::App app{"steptp: verified step-level tensor-program optimization data (LEIR toolkit)", "steptp"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  auto commands = command_registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    actions[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  for (auto* sub : app.get_subcommands()) {
    try {
      return actions.at(sub)();
    } catch (const steptp::leir::LeirError& e) {
      std::cerr << e.what() << "\n";  // already "file:line:col: error: ..."
      return steptp::base::exit_code(e.kind());
    } catch (const std::exception& e) {
      std::cerr << "steptp " << sub->get_name() << ": error: " << e.what() << "\n";
      return steptp::base::exit_code(steptp::base::kind_of(e));
    }
  }
  return 2;
}
