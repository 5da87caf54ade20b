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

#include "apps/api/api.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"
#include "transform/strategy.h"
#include "ir/verify/verifier.h"

namespace steptp::cli {
namespace {

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
    for (auto& p : onnx_import::read_programs_any(o->file)) {
      api::ApplyRequest req;
      req.program = std::move(p);
      req.strategy = s;
      if (o->site >= 0) req.site = o->site;
      req.all = o->all;
      req.samples = o->samples;
      req.seed = o->seed;
      req.verify = !o->no_verify;
      req.explain = o->explain;
      const api::ApplyResult r = api::apply(std::move(req));
      if (!o->explain) {
        for (const auto& a : r.results) {
          auto j = api::applied_json<nlohmann::ordered_json>(a);
          j["program"] = leir::program_to_json(a.candidate.program);
          std::cout << j.dump() << "\n";
        }
        continue;
      }
      for (size_t i = 0; i < r.sites.size(); ++i) {
        if (o->json) std::cout << nlohmann::json{{"site", i}, {"where", r.sites[i].description}, {"applies", true}}.dump() << "\n";
        else std::cout << "site " << i << ": " << r.sites[i].description << ": applies\n";
      }
      for (const auto& refusal : r.refusals) {
        if (o->json) std::cout << nlohmann::json{{"where", refusal.site}, {"applies", false}, {"reason", refusal.reason}}.dump() << "\n";
        else std::cout << "refused: " << refusal.site << ": " << refusal.reason << "\n";
      }
      for (const auto& d : r.dropped) {
        const verify::VerifyReport& v = *d.verdict;
        const std::string why = v.error.empty() ? std::string("an output element is out of tolerance") : v.error;
        if (o->json)
          std::cout << nlohmann::ordered_json{{"site", d.candidate.site}, {"params", d.params},
                                              {"verified", false}, {"verdict", nlohmann::json::parse(verify::to_json(v))},
                                              {"reason", why}}
                           .dump()
                    << "\n";
        else
          std::cout << "dropped: site " << d.candidate.site << " " << d.params.dump() << ": " << verify::to_string(v.verdict)
                    << ": " << why << "\n";
      }
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
