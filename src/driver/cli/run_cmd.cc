// steptp run FILE [--inputs VALUES.json] [--seed S] [--profile P] [--out OUT.json] [--target T]:
// runs a program and writes every known output in the values format of LEIR.md §1.
// Without --inputs the inputs and params are generated from the seed. Exit codes: 0 success,
// 1 invalid program or input, or a run-time error (out-of-range index, unset read, race).
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/api/api.h"
#include "base/error.h"
#include "driver/cli/command.h"
#include "driver/cli/output.h"
#include "front/onnx/onnx_import.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "ir/leir/values.h"

namespace steptp::cli {
namespace {

const std::map<std::string, interp::InputProfile> kProfiles = {
    {"ordinary", interp::InputProfile::Ordinary},
    {"scaled-up", interp::InputProfile::ScaledUp},
    {"scaled-down", interp::InputProfile::ScaledDown},
    {"signs", interp::InputProfile::Signs},
    {"domain", interp::InputProfile::Domain},
    {"domain-small", interp::InputProfile::DomainSmall},
};

// The one program to run from a file that may hold several (JSONL).
leir::Program select_program(const std::string& file, const std::string& name) {
  auto programs = onnx_import::read_programs_any(file);
  if (!name.empty()) {
    for (auto& p : programs)
      if (p.name == name) return std::move(p);
    throw base::Error(base::ErrorKind::BadRequest, fmt::format("{} holds no program named '{}'", file, name));
  }
  if (programs.size() != 1)
    throw base::Error(base::ErrorKind::BadRequest,
                      fmt::format("{} holds {} programs; choose one with --program NAME", file, programs.size()));
  return std::move(programs.front());
}

RegisterCommand run_cmd{{"run", "run a program on given or seeded inputs and print its outputs", [](CLI::App& sub) {
  struct Opts {
    std::string file, inputs, out, program, target = "interp", profile = "ordinary";
    uint64_t seed = 0;
    bool intermediates = false, allow_unset = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("FILE", o->file, "program (.json, .jsonl, .leir or .onnx)")->required();
  sub.add_option("--inputs", o->inputs, "values JSON with every input and param, keyed by name or alias (default: seeded random inputs)");
  sub.add_option("--seed", o->seed, "seed of the generated inputs (default 0)");
  sub.add_option("--profile", o->profile,
                 "generated inputs: ordinary, scaled-up, scaled-down, signs, domain or domain-small (the last two "
                 "draw inputs that reach log, sqrt, fractional powers or divisors positive, away from zero)")
      ->check(CLI::IsMember({"ordinary", "scaled-up", "scaled-down", "signs", "domain", "domain-small"}));
  sub.add_option("--out", o->out, "write the outputs here instead of stdout");
  sub.add_option("--program", o->program, "name of the program to run when FILE holds several");
  sub.add_option("--target", o->target, "where to run: interp (the reference interpreter, default) or cpu (compiled C++/OpenMP)");
  sub.add_flag("--intermediates", o->intermediates, "also print intermediates (unset elements as nan)");
  sub.add_flag("--allow-unset", o->allow_unset, "print unset output elements as nan instead of failing");
  return [o]() -> int {
    api::RunRequest req;
    req.target = api::run_target(o->target);
    if (req.target == api::RunTarget::Cpu && o->intermediates)
      throw base::Error(base::ErrorKind::BadRequest,
                        "--intermediates needs --target interp (compiled code keeps intermediates internal)");
    req.program = select_program(o->file, o->program);
    if (!o->inputs.empty()) req.inputs = leir::key_by_name(req.program, leir::read_values_file(o->inputs), o->inputs);
    req.seed = o->seed;
    req.profile = kProfiles.at(o->profile);
    req.intermediates = o->intermediates;
    req.allow_unset = o->allow_unset;
    leir::TensorMap outputs;
    try {
      outputs = api::run(req);
    } catch (const interp::RuntimeError& e) {
      std::cerr << e.what() << "\n";
      return base::exit_code(e.kind());
    }
    write_result(o->out, leir::values_to_json(outputs).dump() + "\n");
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
