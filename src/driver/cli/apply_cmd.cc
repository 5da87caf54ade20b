// steptp apply FILE --strategy NAME [--site K | --all] [--samples N] [--seed S] [--json]
//              [--explain] [--no-verify]
// JSONL on stdout, one object per result: {"strategy","site","params","class","verdict","program"}
// with `program` in the JSON form of LEIR.md §1 and `verdict` the verifier's report on the result
// against the input program (ir/verify/verifier.h to_json: class, trials, evidential trials, finite
// share, worst element). Results that are not verified equivalent — failed or inconclusive — are
// dropped. Exit 0 with no output when nothing applies. Default: one sampled candidate (seeded
// site and parameters); --all: every site with up to --samples parameter choices each; --site K:
// that site only. --no-verify prints every result unchecked (no "verdict"). --explain prints the
// sites considered, why each refused one was refused, and each dropped result with the verifier's
// reason (text, or JSONL with --json).
#include <iostream>
#include <nlohmann/json.hpp>

#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "ir/verify/verifier.h"

namespace steptp::cli {
namespace {

nlohmann::ordered_json candidate_json(const strategies::Candidate& c, const verify::VerifyReport* verdict) {
  nlohmann::ordered_json j = {{"strategy", c.strategy},
                              {"site", c.site},
                              {"params", nlohmann::json::parse(strategies::params_to_json(c.params))},
                              {"class", std::string(strategies::to_string(c.exactness))}};
  if (verdict) j["verdict"] = nlohmann::ordered_json::parse(verify::to_json(*verdict));
  j["program"] = leir::program_to_json(c.program);
  return j;
}

RegisterCommand apply_cmd{{"apply", "apply one strategy to a program", [](CLI::App& sub) {
  struct Opts {
    std::string file, strategy;
    int site = -1;
    bool all = false, json = false, explain = false, no_verify = false;
    int samples = 3;
    uint64_t seed = 0;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("FILE", o->file, "program (.json, .jsonl, .leir or .onnx)")->required();
  sub.add_option("--strategy", o->strategy, "strategy name (see `steptp strategies`)")->required();
  auto* site = sub.add_option("--site", o->site, "apply at this site index only");
  sub.add_flag("--all", o->all, "every site (up to --samples parameter choices each)")->excludes(site);
  sub.add_option("--samples", o->samples, "parameter choices per site (default 3)");
  sub.add_option("--seed", o->seed, "seed of every random choice (default 0)");
  sub.add_flag("--json", o->json, "JSON lines (results are always JSON; affects --explain)");
  sub.add_flag("--explain", o->explain,
               "list the sites considered, each refusal's reason and each result dropped by the verifier");
  sub.add_flag("--no-verify", o->no_verify, "print results without checking them against the input program");
  return [o]() -> int {
    const auto* s = strategies::find_strategy(o->strategy);
    if (!s) {
      std::cerr << "error: unknown or unimplemented strategy '" << o->strategy << "' (see `steptp strategies`)\n";
      return 2;
    }
    for (const auto& p : onnx_import::read_programs_any(o->file)) {
      const strategies::ScheduleState st(p);
      if (o->explain) {
        const auto& sites = s->sites(st);
        for (size_t i = 0; i < sites.size(); ++i) {
          if (o->json) std::cout << nlohmann::json{{"site", i}, {"where", sites[i].description}, {"applies", true}}.dump() << "\n";
          else std::cout << "site " << i << ": " << sites[i].description << ": applies\n";
        }
        for (const auto& r : s->explain(st)) {
          if (o->json) std::cout << nlohmann::json{{"where", r.site}, {"applies", false}, {"reason", r.reason}}.dump() << "\n";
          else std::cout << "refused: " << r.site << ": " << r.reason << "\n";
        }
      }
      std::vector<strategies::Candidate> results;
      if (o->all || o->site >= 0) {
        strategies::SampleOptions so;
        so.seed = o->seed;
        so.per_site = o->samples;
        if (o->site >= 0) so.only_site = o->site;
        results = strategies::sample_candidates(*s, st, so);
      } else if (auto c = strategies::sample_one(*s, p, o->seed)) {
        results.push_back(std::move(*c));
      }
      for (const auto& c : results) {
        if (o->no_verify) {
          if (!o->explain) std::cout << candidate_json(c, nullptr).dump() << "\n";
          continue;
        }
        verify::VerifyOptions vo;
        vo.seed = o->seed;
        const verify::VerifyReport r = verify::verify(p, c.program, vo);
        if (r.equivalent) {
          if (!o->explain) std::cout << candidate_json(c, &r).dump() << "\n";
          continue;
        }
        if (!o->explain) continue;
        const std::string params = strategies::params_to_json(c.params);
        const std::string why = r.error.empty() ? std::string("an output element is out of tolerance") : r.error;
        if (o->json)
          std::cout << nlohmann::ordered_json{{"site", c.site}, {"params", nlohmann::json::parse(params)},
                                              {"verified", false}, {"verdict", nlohmann::json::parse(verify::to_json(r))},
                                              {"reason", why}}
                           .dump()
                    << "\n";
        else
          std::cout << "dropped: site " << c.site << " " << params << ": " << verify::to_string(r.verdict) << ": " << why
                    << "\n";
      }
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
