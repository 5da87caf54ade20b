// The measured, long-running commands: bench, tune, generate (the CLI's subcommands of the same
// names). Timing goes through the project's one timing policy (apps/reward/timing.h, search/tune/runner.h:
// sandboxed child, machine-wide timing lock); the GIL is released throughout.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>

#include "apps/api/api.h"
#include "base/error.h"
#include "bindings.h"
#include "apps/dataset/dataset.h"
#include "json_caster.h"
#include "ir/leir/program_io.h"
#include "apps/reward/timing.h"
#include "search/tune/tuner.h"

namespace steptp::python {

namespace {

nlohmann::json bench(const leir::Program& program, const std::optional<leir::Program>& against, int threads,
                     double min_time, uint64_t seed) {
  // `against` is timed against `program` (the API's baseline).
  api::MeasureRequest r;
  r.program = valid(program);
  if (against) {
    r.baseline = std::move(r.program);
    r.program = valid(*against, "against");
  }
  r.settings.options.threads = threads;
  r.settings.options.min_time_s = min_time;
  r.settings.input_seed = seed;
  const api::MeasureResult m = api::measure(r);
  if (!m.signature_difference.empty())
    throw base::Error(base::ErrorKind::Invalid, "signatures differ: " + m.signature_difference, "against");
  if (!m.pair.ok) throw base::Error(base::ErrorKind::Failed, m.pair.error);
  nlohmann::json j = reward::to_json(m.pair.cmp.b);
  if (against) {
    j["speedup"] = m.pair.cmp.speedup;
    j["baseline"] = reward::to_json(m.pair.cmp.a);
  }
  return j;
}

// GenerateOptions from keyword arguments named as its fields (the CLI's options with '_' for '-');
// fields not given keep their documented defaults (apps/dataset/dataset.h).
dataset::GenerateOptions generate_options(const std::string& out, const nlohmann::json& kwargs) {
  dataset::GenerateOptions o;
  o.out_dir = out;
  for (const auto& [k, v] : kwargs.items()) {
    try {
      if (k == "seed") o.seed = v.get<uint64_t>();
      else if (k == "size") {
        auto sc = workloads::parse_size_class(v.get<std::string>());
        if (!sc) throw base::Error(base::ErrorKind::BadRequest, "size must be tiny, small or default");
        o.size = *sc;
      } else if (k == "search") {
        const auto m = v.get<std::string>();
        if (m != "greedy" && m != "beam")
          throw base::Error(base::ErrorKind::BadRequest, "search must be greedy or beam");
        o.mode = m == "greedy" ? search::Mode::Greedy : search::Mode::Beam;
      } else if (k == "cost") {
        const auto c = v.get<std::string>();
        if (c != "measured" && c != "model")
          throw base::Error(base::ErrorKind::BadRequest, "cost must be measured or model");
        o.measured = c == "measured";
      }
      else if (k == "programs") o.programs = v.get<int>();
      else if (k == "composites") o.composites = v.get<int>();
      else if (k == "input") o.input = v.get<std::string>();
      else if (k == "examples") o.examples = v.get<bool>();
      else if (k == "beam") o.beam = v.get<int>();
      else if (k == "depth") o.depth = v.get<int>();
      else if (k == "jobs") o.jobs = v.get<int>();
      else if (k == "verify_trials") o.verify_trials = v.get<int>();
      else if (k == "per_strategy_cap") o.per_strategy_cap = v.get<int>();
      else if (k == "format") o.format = v.get<std::string>();
      else if (k == "answer_format") o.answer_format = dataset::answer_format_from(v.get<std::string>());
      else if (k == "token_sample") o.token_sample = v.get<int>();
      else if (k == "eval_fraction") o.eval_fraction = v.get<double>();
      else if (k == "measure_min_time") o.measure_min_time = v.get<double>();
      else if (k == "measure_threads") o.measure_threads = v.get<int>();
      else if (k == "measurements") o.measurements = v.get<std::string>();
      else throw base::Error(base::ErrorKind::BadRequest, "generate() got an unknown option '" + k + "'");
    } catch (const nlohmann::json::type_error&) {
      throw base::Error(base::ErrorKind::BadRequest, "generate() option '" + k + "' has the wrong type: " + v.dump());
    }
  }
  return o;
}

}  // namespace

void bind_measured(nb::module_& m) {
  const auto unlocked = nb::call_guard<nb::gil_scoped_release>();
  m.def("bench", &bench, nb::arg("program"), nb::arg("against").none() = nb::none(), nb::arg("threads") = 0,
        nb::arg("min_time") = 0.5, nb::arg("seed") = 0, unlocked,
        "Compile for the CPU and time (`steptp bench --json`): {'median_ms', 'min_ms', 'max_ms', 'cv', 'repeats'}; "
        "with `against`, its stats, 'speedup' over `program` and `program`'s stats as 'baseline'.");
  m.def(
      "tune",
      [](const leir::Program& program, const std::string& store, int trials, double time_limit, int threads,
         uint64_t seed) {
        tune::TuneResult r;
        nlohmann::json result;
        {
          nb::gil_scoped_release unlocked;
          tune::TuneOptions t;
          t.trials = trials;
          t.time_limit_s = time_limit;
          t.threads = threads;
          t.seed = seed;
          t.store_path = store;
          r = tune::tune(valid(program), t);
          result = tune::result_json(r);
          result["trajectory"] = tune::trajectory_json(r);
          result["wall_s"] = r.wall_s;
        }
        nb::dict d = nb::borrow<nb::dict>(to_python(result));
        d["best"] = nb::cast(std::move(r.best));
        return d;
      },
      nb::arg("program"), nb::arg("store"), nb::arg("trials") = 64, nb::arg("time_limit") = 0.0, nb::arg("threads") = 0,
      nb::arg("seed") = 0,
      "Measurement-guided search (`steptp tune`): result.json's object plus 'trajectory', 'wall_s' and 'best' "
      "(a Program); measurements kept in the SQLite file `store`.");
  m.def(
      "generate",
      [](const std::string& out, const nlohmann::json& options) {
        const auto o = generate_options(out, options);
        return dataset::summary_json(dataset::generate(o), o.out_dir);
      },
      nb::arg("out"), nb::arg("options"), unlocked,
      "The dataset (`steptp generate`, docs/dataset.md) written to `out`, `options` named as "
      "dataset::GenerateOptions' fields; returns the run's summary (`steptp generate --json`).");
}

}  // namespace steptp::python
