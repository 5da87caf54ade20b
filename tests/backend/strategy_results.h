// Strategy results as backend test programs: every registered strategy applied to every input of
// the strategy test set, either all results of the sweep (`steptp strategy-sweep`: every site,
// <= per_site parameter samples per site) or a seeded sample of a few per (strategy, input).
// Identical programs (same canonical text) are kept once: many strategies/sites produce the
// same program, and compiling it twice tests nothing new.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "suite.h"

namespace steptp::backend::testing {

struct StrategyResultSet {
  std::vector<SuiteProgram> programs;  // origin "strategy", name "<strategy>.<origin>.<input>.<n>"
  int raw = 0;                         // results before deduplication
  int strategy_errors = 0;             // a strategy threw while enumerating or applying
  std::map<std::string, int> per_strategy;  // distinct results kept, by strategy
};

// per_input > 0: up to per_input results per (strategy, input), each from sample_one with a
// seed derived from (seed, input, strategy, k). per_input == 0: every result of
// sample_candidates with `per_site` parameter samples per site (the full sweep).
inline StrategyResultSet strategy_results(const std::vector<SuiteProgram>& inputs, int per_input, int per_site,
                                          uint64_t seed) {
  StrategyResultSet out;
  std::set<std::string> seen;
  for (size_t ii = 0; ii < inputs.size(); ++ii) {
    const auto& in = inputs[ii].program;
    seen.insert(leir::program_to_text(in, false));  // a no-op result is the input itself
    for (const auto* s : strategies::all_strategies()) {
      std::vector<strategies::Candidate> cands;
      try {
        if (per_input == 0) {
          cands = strategies::sample_candidates(*s, in, {.seed = seed, .per_site = per_site});
        } else {
          uint64_t base = base::mix_seed(base::mix_seed(seed, ii), strategies::strategy_index(s->name()));
          for (int k = 0; k < per_input; ++k)
            if (auto c = strategies::sample_one(*s, in, base::mix_seed(base, k))) cands.push_back(std::move(*c));
        }
      } catch (const std::exception&) {
        ++out.strategy_errors;  // the strategies' own tests own this; here it only loses inputs
        continue;
      }
      for (auto& c : cands) {
        ++out.raw;
        if (!seen.insert(leir::program_to_text(c.program, false)).second) continue;
        c.program.name = fmt::format("{}.{}.{}.{}", s->name(), inputs[ii].origin, inputs[ii].program.name,
                                     out.per_strategy[std::string(s->name())]++);
        out.programs.push_back({"strategy", std::move(c.program)});
      }
    }
  }
  return out;
}

// The strategy test set: the tiny workloads, the 10 examples and `composites` seeded composites.
inline std::vector<SuiteProgram> strategy_inputs(int composites, uint64_t seed, std::vector<std::string>* errors = nullptr) {
  auto out = workload_programs(errors);
  for (auto& p : example_cases()) out.push_back({"example", std::move(p.program)});
  for (auto& p : composite_programs(composites, seed)) out.push_back(std::move(p));
  return out;
}

}  // namespace steptp::backend::testing
