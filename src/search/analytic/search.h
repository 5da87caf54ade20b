// Seeded greedy / beam search over strategy applications (issue 6, step 2 of the pipeline).
//
// From a root program, each state is expanded by every registered strategy: up to
// `sites_per_strategy` sites and `params_per_site` parameter choices per site are drawn with the
// strategies sampler (choose_indices, seeded by (seed, state, strategy)), applied, verified against
// the ROOT with verify::verify, and the survivors are scored by a cost function. Only exact and
// reassoc verdicts count as verified (never inconclusive); a root that gives the verifier no
// evidence is reported (SearchStats::root_inconclusive) and not searched. Greedy keeps the
// best improving candidate; beam keeps the B best distinct candidates over the whole frontier.
// Every verified candidate becomes a Transition labelled improving / non_improving, so the dataset
// can keep informative non-improving steps.
//
// Cost: model_cost(), the analytic cost (ir/analysis/cost.h) on its fixed reference machine,
// ranks and prunes candidates — results carry measured=false. `steptp generate`
// keeps the model here (so trajectories never depend on timing noise) and times the transitions
// that become records afterwards, on the CPU backend (apps/dataset/measurement.h); measured search is
// the tuner's (tune/). Determinism: nothing depends on time or thread scheduling.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "transform/strategy.h"
#include "ir/verify/verifier.h"

namespace steptp::search {

struct Cost {
  double value = 0;    // lower is better (model units or microseconds)
  bool measured = false;
};
// The analytic cost (ir/analysis/cost.h) on analysis::kReferenceMachine, rounded to 0.1: the same
// formula as the tuner's prior, on a fixed machine, so it does not depend on the machine computing it.
Cost model_cost(const leir::Program& p);

enum class Mode { Greedy, Beam };

struct SearchOptions {
  uint64_t seed = 0;
  Mode mode = Mode::Greedy;
  int beam = 3;
  int depth = 3;
  int sites_per_strategy = 2;
  int params_per_site = 2;
  int verify_trials = 3;
  double improve_threshold = 1.0005;  // speedup vs parent above which a step counts as improving
};

struct Step {
  std::string strategy;
  strategies::Params params;
};

struct Transition {
  int depth = 0;                 // 1 for a step from the root
  int state = 0;                 // index of the parent state in the search (0 = root)
  std::vector<Step> steps_so_far;
  std::string strategy;
  int site_index = 0;
  strategies::Site site;
  strategies::Params params;
  strategies::Exactness exactness = strategies::Exactness::Exact;
  leir::Program parent, result;
  verify::VerifyReport report;
  Cost cost_root, cost_parent, cost_result;
  bool improving = false;
  bool chosen = false;           // on a kept trajectory (expanded further)
  uint64_t result_hash = 0;
  // Set for the steps of a tuned trajectory (apps/dataset/tuned_trajectory.h): the step's 1-based
  // position on the root's best-found path, the path's length and its confirmed speedup over the
  // root. 0 for every other transition.
  int path_step = 0, path_length = 0;
  double path_speedup = 0;
  // Tuned transitions whose result the tuner measured: its learned cost model's prediction of the
  // speedup over the root when it selected the candidate.
  std::optional<double> learned_speedup_vs_root;
  // ... and whether the tuner's own session found it faster than its parent (when it measured
  // both): what the record filters rank a tuned state's steps by (the exported label comes from
  // the records' re-measurement).
  std::optional<bool> tuner_faster;
};

struct SearchStats {
  int states = 0, candidates = 0, verified = 0, failed = 0, duplicates = 0;
  // The root's outputs were mostly NaN/inf on every verification input set (ir/verify/verifier.h
  // evidence rule): no candidate could be verified, the search did not run.
  bool root_inconclusive = false;
  double root_finite_share = 0;  // largest share of finite root output elements on those input sets
  double search_s = 0, verify_s = 0, cost_s = 0;  // wall time (reporting only, never in output)
};

struct SearchResult {
  std::vector<Transition> transitions;  // in deterministic expansion order
  SearchStats stats;
};

SearchResult run_search(const leir::Program& root, const SearchOptions& opts);

// Speedup a/b rounded to 4 significant decimals (as stored in records).
double round_ratio(double num, double den);

}  // namespace steptp::search
