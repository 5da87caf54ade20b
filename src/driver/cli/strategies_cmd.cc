// steptp strategies [--json]: the 43 strategies of STRATEGIES.md in order, with exactness class
// and a one-line description (a name not yet implemented is listed as such).
#include <iostream>
#include <nlohmann/json.hpp>

#include "driver/cli/command.h"
#include "transform/strategy.h"

namespace steptp::cli {
namespace {

RegisterCommand strategies_cmd{{"strategies", "list the 43 strategies with class and description", [](CLI::App& sub) {
  auto json = std::make_shared<bool>(false);
  sub.add_flag("--json", *json, "one JSON object per line: index, name, class, description");
  return [=]() -> int {
    const auto& names = strategies::strategy_names();
    for (int i = 0; i < strategies::kStrategyCount; ++i) {
      const auto* s = strategies::find_strategy(names[i]);
      std::string cls = s ? std::string(strategies::to_string(s->exactness())) : "unimplemented";
      std::string desc = s ? std::string(s->description()) : "";
      if (*json) {
        nlohmann::json j = {{"index", i}, {"name", names[i]}, {"class", cls}, {"description", desc}};
        std::cout << j.dump() << "\n";
      } else {
        std::cout << i << "\t" << names[i] << "\t" << cls << "\t" << desc << "\n";
      }
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
