// `--measure model`: a stand-in for the CPU runner that "times" a program by the analytic cost on
// this machine (ir/analysis/cost.h, as the tuner's prior sees it) — deterministic, instant, no compiler.
// For quick runs and tests of the searches and the funnel (which it passes through unchanged:
// the store, the budgets, the cache); its figures are model units, never reported as timings,
// and its store entries are keyed by its own identity so they never mix with measurements.
#pragma once

#include "search/tune/machine.h"
#include "search/tune/runner.h"

namespace steptp::optimize {

class ModelRunner : public tune::Runner {
 public:
  explicit ModelRunner(int threads) : machine_(tune::this_machine(threads)) {}
  std::string identity() const override;
  std::vector<tune::PairResult> run(const std::vector<leir::Program>& programs,
                                    const std::vector<std::pair<int, int>>& pairs) override;
  bool times() const override { return false; }  // model units: no training data for a cost model

 private:
  tune::Machine machine_;
};

}  // namespace steptp::optimize
