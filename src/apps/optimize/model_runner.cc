#include "apps/optimize/model_runner.h"

#include "ir/analysis/cost.h"

namespace steptp::optimize {

// The identity keys stored entries: it keeps the name the estimate had when stores were first written.
std::string ModelRunner::identity() const { return "model:analytic_estimate;" + tune::fingerprint(machine_); }

std::vector<tune::PairResult> ModelRunner::run(const std::vector<leir::Program>& programs,
                                               const std::vector<std::pair<int, int>>& pairs) {
  std::vector<tune::PairResult> out;
  const analysis::CostMachine m = tune::cost_machine(machine_);
  for (auto [a, b] : pairs) {
    tune::PairResult r;
    r.ok = true;
    // A fixed small spread, so the noise rule (tune::clears_noise) sees a confident figure.
    r.cmp.a = {.median_ms = analysis::analytic_cost(programs[size_t(a)], m), .cv = 0.001, .repeats = 10};
    r.cmp.b = {.median_ms = analysis::analytic_cost(programs[size_t(b)], m), .cv = 0.001, .repeats = 10};
    r.cmp.speedup = r.cmp.b.median_ms > 0 ? r.cmp.a.median_ms / r.cmp.b.median_ms : 1;
    out.push_back(r);
  }
  return out;
}

}  // namespace steptp::optimize
