// steptp apply FILE --strategy NAME [--site K | --all] [--samples N] [--seed S] [--json]
//              [--explain]
// JSONL on stdout, one object per result: {"strategy","site","params","class","program"} with
// `program` in the JSON form of LEIR.md §1. Exit 0 with no output when nothing applies.
// Default: one sampled candidate (seeded site and parameters); --all: every site with up to
// --samples parameter choices each; --site K: that site only. --explain prints the sites
// considered and why each refused one was refused (text, or JSONL with --json).
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "import/onnx_import.h"
#include "leir/diagnostic.h"
#include "leir/printer.h"
#include "leir/program_io.h"
#include "strategies/sampler.h"
#include "strategies/strategy.h"

namespace steptp::cli {
namespace {

nlohmann::json candidate_json(const strategies::Candidate& c) {
  return {{"strategy", c.strategy},
          {"site", c.site},
          {"params", nlohmann::json::parse(strategies::params_to_json(c.params))},
          {"class", std::string(strategies::to_string(c.exactness))},
          {"program", leir::program_to_json(c.program)}};
}

RegisterCommand reg{{"apply", "apply one strategy to a program", [](CLI::App& sub) {
  struct Opts {
    std::string file, strategy;
    int site = -1;
    bool all = false, json = false, explain = false;
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
  sub.add_flag("--explain", o->explain, "list the sites considered and each refusal's reason");
  return [o]() -> int {
    const auto* s = strategies::find_strategy(o->strategy);
    if (!s) {
      std::cerr << "error: unknown or unimplemented strategy '" << o->strategy << "' (see `steptp strategies`)\n";
      return 2;
    }
    for (const auto& p : onnx_import::read_programs_any(o->file)) {
      if (o->explain) {
        auto sites = s->sites(p);
        for (size_t i = 0; i < sites.size(); ++i) {
          if (o->json) std::cout << nlohmann::json{{"site", i}, {"where", sites[i].description}, {"applies", true}}.dump() << "\n";
          else std::cout << "site " << i << ": " << sites[i].description << ": applies\n";
        }
        for (const auto& r : s->explain(p)) {
          if (o->json) std::cout << nlohmann::json{{"where", r.site}, {"applies", false}, {"reason", r.reason}}.dump() << "\n";
          else std::cout << "refused: " << r.site << ": " << r.reason << "\n";
        }
        continue;
      }
      std::vector<strategies::Candidate> results;
      if (o->all || o->site >= 0) {
        strategies::SampleOptions so;
        so.seed = o->seed;
        so.per_site = o->samples;
        if (o->site >= 0) so.only_site = o->site;
        results = strategies::sample_candidates(*s, p, so);
      } else if (auto c = strategies::sample_one(*s, p, o->seed)) {
        results.push_back(std::move(*c));
      }
      for (const auto& c : results) std::cout << candidate_json(c).dump() << "\n";
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
