// steptp check FILE... [--json]: static validation (LEIR.md §3-4) of every program in the files.
// Exit 0 when all are valid, one summary line per program on stdout; exit 1 otherwise, every
// error as "FILE:LINE:COL: error: ..." on stderr. --json prints one JSON object per program.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/api/api.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/printer.h"
#include "ir/leir/validate.h"

namespace steptp::cli {
namespace {

std::string summary_line(const leir::ProgramSummary& s) {
  std::vector<std::string> inter;
  for (const auto& t : s.intermediates)
    inter.push_back(fmt::format("{}:{}[{}]", t.name, leir::to_string(t.dtype), fmt::join(t.shape, ",")));
  return fmt::format("{}: nests={} statements={} intermediates={} flops={}", s.name.empty() ? "-" : s.name, s.nests,
                     s.statements, inter.empty() ? std::string("none") : fmt::format("{}", fmt::join(inter, ",")),
                     leir::format_number(s.flops, s.flops < 9e15));
}

nlohmann::json summary_json(const std::string& file, const leir::ValidationReport& report) {
  nlohmann::json j = {{"file", file}};
  j.update(leir::report_json(report));
  return j;
}

RegisterCommand check_cmd{{"check", "validate programs statically and summarize them", [](CLI::App& sub) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  sub.add_option("FILE", *files, "programs (.json, .jsonl or .leir)")->required();
  sub.add_flag("--json", *json, "one JSON object per program: summary facts and errors");
  return [=]() -> int {
    int rc = 0;
    for (const auto& file : *files) {
      std::vector<leir::Program> programs;
      try {
        programs = onnx_import::read_programs_any(file);
      } catch (const leir::LeirError& e) {
        std::cerr << e.what() << "\n";
        if (*json) {
          leir::ValidationReport failed;
          failed.errors.push_back({e.file(), e.loc(), e.message()});
          std::cout << summary_json(file, failed).dump() << "\n";
        }
        rc = 1;
        continue;
      }
      for (auto& p : programs) {
        const auto report = api::check({.program = std::move(p)}).report;
        for (const auto& e : report.errors) std::cerr << e.format() << "\n";
        if (!report.ok()) rc = 1;
        if (*json) std::cout << summary_json(file, report).dump() << "\n";
        else if (report.ok()) std::cout << summary_line(report.summary) << "\n";
      }
    }
    return rc;
  };
}}};

}  // namespace
}  // namespace steptp::cli
