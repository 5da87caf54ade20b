// The quick commands: check, verify, strategies, apply, lower, tokens (as the CLI's subcommands
// of the same names; src/driver/cli/*_cmd.cc).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <memory>
#include <mutex>

#include "base/error.h"
#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "bindings.h"
#include "json_caster.h"
#include "ir/leir/validate.h"
#include "apps/reward/reward.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "front/tokenizer/bpe_tokenizer.h"
#include "ir/verify/verifier.h"

namespace steptp::python {

namespace {

const strategies::Strategy& strategy(const std::string& name) {
  const auto* s = strategies::find_strategy(name);
  if (!s) throw base::Error(base::ErrorKind::BadRequest, "unknown strategy '" + name + "' (see steptp.strategies())");
  return *s;
}

// One applied (and, unless asked not to, verified) strategy result.
struct Applied {
  nlohmann::json facts;  // strategy, site, params, class, verdict
  leir::Program program;
};

std::vector<Applied> apply(const leir::Program& program, const std::string& name, std::optional<int> site,
                           const std::optional<nlohmann::json>& params, bool all, int samples, uint64_t seed,
                           bool verify) {
  const leir::Program p = valid(program);
  const auto& s = strategy(name);
  std::vector<strategies::Candidate> cands;
  if (params) {
    if (!params->is_object()) throw base::Error(base::ErrorKind::BadRequest, "params must be a dict");
    leir::Program r = reward::apply_action(p, name, site.value_or(0), *params);
    cands.push_back({name, site.value_or(0), {}, s.exactness(), std::move(r)});
  } else if (all || site) {
    strategies::SampleOptions so;
    so.seed = seed;
    so.per_site = samples;
    so.only_site = site;
    cands = strategies::sample_candidates(s, p, so);
  } else if (auto c = strategies::sample_one(s, p, seed)) {
    cands.push_back(std::move(*c));
  }
  std::vector<Applied> out;
  for (auto& c : cands) {
    nlohmann::json facts = {{"strategy", c.strategy}, {"site", c.site},
                            {"params", params ? *params : nlohmann::json::parse(strategies::params_to_json(c.params))},
                            {"class", std::string(strategies::to_string(c.exactness))}};
    if (verify) {
      verify::VerifyOptions vo;
      vo.seed = seed;
      const auto r = verify::verify(p, c.program, vo);
      if (!r.equivalent) continue;
      facts["verdict"] = nlohmann::json::parse(verify::to_json(r));
    }
    out.push_back({std::move(facts), std::move(c.program)});
  }
  return out;
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
  m.def("check", [](const leir::Program& p) { return leir::report_json(leir::validate_all(p)); }, nb::arg("program"),
        unlocked, "Static validation (`steptp check --json`): {'valid', 'errors': [{'line', 'col', 'message'}], ...}.");
  m.def(
      "verify",
      [](const leir::Program& a, const leir::Program& b, int trials, uint64_t seed) {
        verify::VerifyOptions vo;
        vo.trials = trials;
        vo.seed = seed;
        const auto r = verify::verify(valid(a, "a"), b, vo);
        auto j = nlohmann::json::parse(verify::to_json(r));
        if (!r.error.empty()) j["error"] = r.error;
        return j;
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
        std::vector<Applied> results;
        {
          nb::gil_scoped_release unlocked;
          results = apply(p, name, site, params, all, samples, seed, verify);
        }
        nb::list out;
        for (auto& r : results) {
          nb::dict d = nb::borrow<nb::dict>(to_python(r.facts));
          d["program"] = nb::cast(std::move(r.program));
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
        const leir::Program p = valid(program);
        try {
          if (target == "cpu")
            return std::string(backend::cpu::cpu_prelude()) + backend::cpu::generate_cpu_kernel(p, {.all_f64 = f64}).code;
          if (target == "cuda") return std::string(backend::cuda::cuda_prelude()) + backend::cuda::generate_cuda(p).code;
          if (target == "tir") {
            backend::tir::TirOptions t;
            if (!backend::tir::parse_dialect(tir_dialect, &t.dialect))
              throw base::Error(base::ErrorKind::BadRequest, "tir_dialect must be sblock or block");
            t.cpu_compatible = cpu_compatible;
            return backend::tir::emit_tvmscript(p, t);
          }
        } catch (const leir::LeirError& e) {
          throw LowerFailure{e};
        }
        throw base::Error(base::ErrorKind::BadRequest, "target must be cpu, cuda or tir");
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
