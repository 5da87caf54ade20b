// steptp bench FILE [--against OTHER | --vs-scalar-math] [--threads T] [--min-time SEC] [--flush]
// [--seed S] [--json]: compiles the program(s) for the CPU (native dtypes), runs them on seeded
// inputs and prints timing statistics; with --against, both run interleaved in one session and
// the speedup of OTHER over FILE is reported; --vs-scalar-math does the same for FILE lowered
// with scalar math calls (CompilerOptions::vector_math off: the lowering before vector math)
// against FILE as usual. --json: {"median_ms","min_ms","max_ms","cv","repeats","speedup"?,
// "baseline"?}: the stats of FILE, or when comparing those of the second program, with FILE's
// (or FILE-with-scalar-math's) under "baseline".
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "lower/cpu/cpu_program.h"
#include "lower/measure/measure.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/interp/inputs.h"
#include "ir/leir/program_io.h"

namespace steptp::cli {
namespace {

leir::Program only_program(const std::string& file) {
  auto ps = onnx_import::read_programs_any(file);
  if (ps.size() != 1)
    throw base::Error(base::ErrorKind::Invalid, fmt::format("{} holds {} programs; bench takes one", file, ps.size()));
  return ps.front();
}

nlohmann::json stats_json(const backend::TimingStats& s) {
  return {{"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"max_ms", s.max_ms}, {"cv", s.cv}, {"repeats", s.repeats}};
}

RegisterCommand bench_cmd{{"bench", "time a program compiled for the CPU (optionally against another)",
                           [](CLI::App& sub) {
  struct Opts {
    std::string file, against;
    int threads = 0;
    double min_time = 0.5;
    uint64_t seed = 0;
    bool json = false, flush = false, vs_scalar_math = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("FILE", o->file, "program (.json or .leir)")->required();
  sub.add_option("--against", o->against, "second program with the same signature: report its speedup over FILE");
  sub.add_flag("--vs-scalar-math", o->vs_scalar_math,
               "time FILE with scalar math calls against FILE with vector math, interleaved")
      ->excludes("--against");
  sub.add_option("--threads", o->threads, "OpenMP threads (default: all)");
  sub.add_option("--min-time", o->min_time, "minimum measuring time in seconds (default 0.5)");
  sub.add_option("--seed", o->seed, "seed of the generated inputs");
  sub.add_flag("--flush", o->flush, "flush the caches before every timed run");
  sub.add_flag("--json", o->json, "one JSON object on stdout");
  return [o]() -> int {
    backend::MeasureOptions m;
    m.threads = o->threads;
    m.min_time_s = o->min_time;
    m.flush_cache = o->flush;
    std::vector<leir::Program> programs{only_program(o->file)};
    if (!o->against.empty()) programs.push_back(only_program(o->against));
    std::vector<backend::cpu::CpuBuildResult> built;
    if (o->vs_scalar_math) {
      backend::cpu::KernelCompiler scalar({.vector_math = false});
      built = backend::cpu::build_cpu_programs(programs, {}, &scalar);
      built.push_back(backend::cpu::build_cpu_programs(programs).front());
      programs.push_back(programs[0]);
      programs[0].name += " (scalar math)";
    } else {
      built = backend::cpu::build_cpu_programs(programs);
    }
    for (size_t i = 0; i < built.size(); ++i)
      if (!built[i].program)
        throw base::Error(base::ErrorKind::Failed, fmt::format("{}: {}", programs[i].name, built[i].error));
    auto inputs = interp::generate_inputs(programs[0], o->seed);
    auto ba = built[0].program->bind(inputs);
    const auto& pa = *built[0].program;
    if (built.size() == 1) {
      auto s = backend::measure([&] { pa.run(*ba); }, m);
      if (o->json) std::cout << stats_json(s).dump() << "\n";
      else std::cout << fmt::format("{}: median {:.4f} ms (min {:.4f}, max {:.4f}, cv {:.3f}, {} repeats)\n",
                                    programs[0].name, s.median_ms, s.min_ms, s.max_ms, s.cv, s.repeats);
      return 0;
    }
    auto bb = built[1].program->bind(inputs);
    const auto& pb = *built[1].program;
    auto c = backend::compare_interleaved([&] { pa.run(*ba); }, [&] { pb.run(*bb); }, m);
    if (o->json) {
      auto j = stats_json(c.b);
      j["speedup"] = c.speedup;
      j["baseline"] = stats_json(c.a);
      std::cout << j.dump() << "\n";
    } else {
      std::cout << fmt::format("{}: median {:.4f} ms (cv {:.3f})\n{}: median {:.4f} ms (cv {:.3f})\nspeedup {:.3f}x ({} interleaved repeats)\n",
                               programs[0].name, c.a.median_ms, c.a.cv, programs[1].name, c.b.median_ms, c.b.cv,
                               c.speedup, c.b.repeats);
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
