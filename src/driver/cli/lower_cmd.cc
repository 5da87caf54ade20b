// steptp lower FILE --target cpu|cuda|tir [--tir-dialect sblock|block] [--f64] [--cpu-compatible]:
// prints the lowered source on stdout. Exit 1 with the reason when the target rejects the program.
#include <iostream>

#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"

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
    for (const auto& p : onnx_import::read_programs_any(o->file)) {
      if (o->target == "cpu") {
        std::cout << backend::cpu::cpu_prelude() << backend::cpu::generate_cpu_kernel(p, {.all_f64 = o->f64}).code;
      } else if (o->target == "cuda") {
        std::cout << backend::cuda::cuda_prelude() << backend::cuda::generate_cuda(p).code;
      } else {
        backend::tir::TirOptions t;
        backend::tir::parse_dialect(o->dialect, &t.dialect);
        t.cpu_compatible = o->cpu_compatible;
        std::cout << backend::tir::emit_tvmscript(p, t);
      }
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
