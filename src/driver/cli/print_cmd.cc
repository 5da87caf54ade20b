// steptp print FILE [--pretty] [--json]: the canonical LEIR of each program.
#include <iostream>
#include <nlohmann/json.hpp>

#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::cli {
namespace {

RegisterCommand print_cmd{{"print", "print the canonical LEIR of a program", [](CLI::App& sub) {
  auto file = std::make_shared<std::string>();
  auto pretty = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  sub.add_option("FILE", *file, "program (.json, .jsonl, .leir or .onnx)")->required();
  sub.add_flag("--pretty", *pretty, "one nest per line, nested nests indented");
  sub.add_flag("--json", *json, "print the whole program object (JSON form of LEIR.md §1)");
  return [=]() -> int {
    for (const auto& p : onnx_import::read_programs_any(*file)) {
      if (*json) std::cout << leir::program_to_json(p).dump() << "\n";
      else if (*pretty) std::cout << leir::print_body_pretty(p.body);
      else std::cout << leir::print_body(p.body) << "\n";
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
