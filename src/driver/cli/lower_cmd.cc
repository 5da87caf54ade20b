// steptp lower FILE --target cpu|cuda|tir [--tir-dialect sblock|block] [--f64] [--cpu-compatible]:
// prints the lowered source on stdout. Exit 1 with the reason when the target rejects the program.
#include <iostream>

#include "apps/api/api.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"

namespace steptp::cli {
namespace {

RegisterCommand lower_cmd{{"lower", "print the source a backend generates for a program", [](CLI::App& sub) {
  struct Opts {
    std::string file, target = "cpu", dialect = "sblock";
    bool f64 = false, cpu_compatible = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("FILE", o->file, "program (.json, .jsonl, .leir or .onnx)")->required();
  sub.add_option("--target", o->target, "cpu (C++/OpenMP), cuda (CUDA C) or tir (TVMScript)")
      ->check(CLI::IsMember({"cpu", "cuda", "tir"}));
  sub.add_option("--tir-dialect", o->dialect, "sblock (TVM >= 0.22, default) or block (TVM <= 0.21)")
      ->check(CLI::IsMember({"sblock", "block"}));
  sub.add_flag("--f64", o->f64, "cpu: the all-float64 verification build");
  sub.add_flag("--cpu-compatible", o->cpu_compatible, "tir: serial B loops and global intermediates (LLVM target)");
  return [o]() -> int {
    for (auto& p : onnx_import::read_programs_any(o->file)) {
      api::LowerRequest req;
      req.program = std::move(p);
      req.target = *api::lower_target(o->target);  // CLI11 admits only the three
      req.f64 = o->f64;
      backend::tir::parse_dialect(o->dialect, &req.tir.dialect);
      req.tir.cpu_compatible = o->cpu_compatible;
      std::cout << api::lower(req);
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
