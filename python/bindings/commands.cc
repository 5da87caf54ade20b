// The quick commands: check, verify, strategies, apply, lower, tokens (as the CLI's subcommands
// of the same names; src/driver/cli/*_cmd.cc), the first ones through the command layer
// (apps/api/api.h) as those subcommands.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>

#include "apps/api/api.h"
#include "base/error.h"
#include "bindings.h"
#include "json_caster.h"
#include "ir/leir/validate.h"
#include "transform/strategy.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace steptp::python {

namespace {

const strategies::Strategy& strategy(const std::string& name) {
  const auto* s = strategies::find_strategy(name);
  if (!s) throw base::Error(base::ErrorKind::BadRequest, "unknown strategy '" + name + "' (see steptp.strategies())");
  return *s;
}

const tokenizer::BpeTokenizer& cached_tokenizer(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokenizer::BpeTokenizer>> cache;
  std::lock_guard lock(mu);
  auto& t = cache[path];
  if (!t) t = std::make_unique<tokenizer::BpeTokenizer>(tokenizer::BpeTokenizer::load(path));
  return *t;
}

}  // namespace

void bind_commands(nb::module_& m) {
  const auto unlocked = nb::call_guard<nb::gil_scoped_release>();
  m.def(
      "check",
      [](const leir::Program& p) {
        api::CheckRequest c;
        c.program = p;
        return leir::report_json(api::check(std::move(c)).report);
      },
      nb::arg("program"), unlocked, "Static validation (`steptp check --json`): {'valid', 'errors': [{'line', 'col', 'message'}], ...}.");
  m.def(
      "verify",
      [](const leir::Program& a, const leir::Program& b, int trials, uint64_t seed) {
        api::VerifyRequest v;
        v.a = valid(a, "a");
        v.b = b;
        v.options.trials = trials;
        v.options.seed = seed;
        return api::verify_json(api::verify(v));
      },
      nb::arg("a"), nb::arg("b"), nb::arg("trials") = 4, nb::arg("seed") = 0, unlocked,
      "Equivalence of b to a (LEIR.md §5; `steptp verify --json`).");
  m.def(
      "strategies",
      [] {
        std::vector<std::string> names;
        for (auto n : strategies::strategy_names()) names.emplace_back(n);
        return names;
      },
      "The 43 strategy names in STRATEGIES.md order.");
  m.def(
      "strategy_info",
      [](const std::string& name) {
        const auto& s = strategy(name);
        return nlohmann::json{{"name", name}, {"index", strategies::strategy_index(name)},
                              {"class", std::string(strategies::to_string(s.exactness()))},
                              {"description", std::string(s.description())}};
      },
      nb::arg("name"), "{'name', 'index', 'class', 'description'} of one strategy (`steptp strategies --json`).");
  m.def(
      "apply",
      [](const leir::Program& p, const std::string& name, std::optional<int> site, std::optional<nlohmann::json> params,
         bool all, int samples, uint64_t seed, bool verify) {
        api::ApplyResult r;
        {
          nb::gil_scoped_release unlocked;
          api::ApplyRequest a;
          a.program = valid(p);
          a.strategy = &strategy(name);
          if (params && !params->is_object()) throw base::Error(base::ErrorKind::BadRequest, "params must be a dict");
          a.site = site;
          a.params = params;
          a.all = all;
          a.samples = samples;
          a.seed = seed;
          a.verify = verify;
          r = api::apply(std::move(a));
        }
        nb::list out;
        for (auto& a : r.results) {
          nb::dict d = nb::borrow<nb::dict>(to_python(api::applied_json<nlohmann::json>(a)));
          d["program"] = nb::cast(std::move(a.candidate.program));
          out.append(d);
        }
        return out;
      },
      nb::arg("program"), nb::arg("strategy"), nb::arg("site").none() = nb::none(), nb::arg("params").none() = nb::none(),
      nb::arg("all") = false, nb::arg("samples") = 3, nb::arg("seed") = 0, nb::arg("verify") = true,
      "Strategy results (`steptp apply`), each verified against `program` unless verify=False: "
      "[{'strategy', 'site', 'params', 'class', 'verdict', 'program'}].");
  m.def(
      "lower",
      [](const leir::Program& program, const std::string& target, const std::string& tir_dialect, bool f64,
         bool cpu_compatible) {
        api::LowerRequest l;
        l.program = valid(program);
        l.f64 = f64;
        const auto t = api::lower_target(target);
        if (!t) throw base::Error(base::ErrorKind::BadRequest, "target must be cpu, cuda or tir");
        l.target = *t;
        if (l.target == api::LowerTarget::Tir && !backend::tir::parse_dialect(tir_dialect, &l.tir.dialect))
          throw base::Error(base::ErrorKind::BadRequest, "tir_dialect must be sblock or block");
        l.tir.cpu_compatible = cpu_compatible;
        try {
          return api::lower(l);
        } catch (const leir::LeirError& e) {
          throw LowerFailure{e};
        }
      },
      nb::arg("program"), nb::arg("target") = "cpu", nb::arg("tir_dialect") = "sblock", nb::arg("f64") = false,
      nb::arg("cpu_compatible") = false, unlocked,
      "C++/OpenMP, CUDA C or TVMScript source (`steptp lower`); steptp.LowerError when the target rejects it.");
  m.def(
      "tokens",
      [](const std::string& text, const std::string& tokenizer_path) {
        return cached_tokenizer(tokenizer_path.empty() ? tokenizer::default_qwen3_path() : tokenizer_path).count(text);
      },
      nb::arg("text"), nb::arg("tokenizer") = "", unlocked,
      "Exact Qwen3 token count of `text` (`steptp tokens`; the tokenizer.json from $STEPTP_SHARED or ../shared).");
}

}  // namespace steptp::python
