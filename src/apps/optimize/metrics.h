// The field's metrics of an optimization run, computed from the recorded events alone (so a run
// directory is re-scored without re-running anything).
//
// Per program (program_metrics):
//   funnel       proposals judged, and how many passed each stage (parsed, valid, differs,
//                equivalent, compiles, faster) with rates over the judged; inconclusive
//                verdicts, transport failures (no answer) and proposals left unmeasured because
//                the measurement budget ran out or the measurement could not take place
//                (infrastructure_failure) are counted apart (not judged);
//   pass@k       the unbiased estimator 1 - C(n-c, k)/C(n, k) over the program's n judged
//                proposals of which c are correct (verified equivalent and compiled and ran), k ∈
//                {1, 5, 10} (null when n < k);
//   best         the best measured speedup over the naive root among the candidates that are
//                faster than it by the timing policy's noise rule (tune::clears_noise; 1 when none);
//   curves       best-so-far after each measured candidate, and vs cumulative completion tokens;
//   cost         LLM calls, prompt and completion tokens, latency (mean, p50, max).
// Aggregated (aggregate_metrics): the funnel summed; pass@k averaged; fast_p for p ∈ {0, 1, 1.2}
// (share of programs with a correct candidate whose best speedup exceeds p; fast_0: any correct
// candidate), against the naive program; geomean and median of the best speedups; the
// sample-efficiency curve as the geomean over programs of best-so-far after m measured
// candidates (a program that stopped earlier keeps its last value).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace steptp::optimize {

nlohmann::json program_metrics(const nlohmann::json& events);
nlohmann::json aggregate_metrics(const std::vector<nlohmann::json>& per_program);

// pass@k (unbiased, Chen et al. 2021) for n samples of which c are correct.
double pass_at_k(int n, int c, int k);

// A plain-text table: one row per program, then the aggregate.
std::string metrics_table(const std::vector<std::string>& names, const std::vector<nlohmann::json>& per_program,
                          const nlohmann::json& aggregate);

}  // namespace steptp::optimize
