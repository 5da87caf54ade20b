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

#include "apps/api/api.h"
#include "apps/reward/timing.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"

namespace steptp::cli {
namespace {

leir::Program only_program(const std::string& file) {
  auto ps = onnx_import::read_programs_any(file);
  if (ps.size() != 1)
    throw base::Error(base::ErrorKind::Invalid, fmt::format("{} holds {} programs; bench takes one", file, ps.size()));
  return ps.front();
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
    api::BenchRequest req;
    req.options.threads = o->threads;
    req.options.min_time_s = o->min_time;
    req.options.flush_cache = o->flush;
    req.programs.push_back(only_program(o->file));
    if (!o->against.empty()) req.programs.push_back(only_program(o->against));
    req.vs_scalar_math = o->vs_scalar_math;
    req.seed = o->seed;
    const api::BenchResult r = api::bench(std::move(req));
    if (!r.comparison) {
      const auto& s = r.stats;
      if (o->json) std::cout << reward::to_json(s).dump() << "\n";
      else std::cout << fmt::format("{}: median {:.4f} ms (min {:.4f}, max {:.4f}, cv {:.3f}, {} repeats)\n",
                                    r.names[0], s.median_ms, s.min_ms, s.max_ms, s.cv, s.repeats);
      return 0;
    }
    const auto& c = *r.comparison;
    if (o->json) {
      auto j = reward::to_json(c.b);
      j["speedup"] = c.speedup;
      j["baseline"] = reward::to_json(c.a);
      std::cout << j.dump() << "\n";
    } else {
      std::cout << fmt::format("{}: median {:.4f} ms (cv {:.3f})\n{}: median {:.4f} ms (cv {:.3f})\nspeedup {:.3f}x ({} interleaved repeats)\n",
                               r.names[0], c.a.median_ms, c.a.cv, r.names[1], c.b.median_ms, c.b.cv,
                               c.speedup, c.b.repeats);
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
