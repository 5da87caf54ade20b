#include "apps/dataset/tuned_trajectory.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "search/tune/observations.h"
#include "search/tune/runner.h"
#include "search/tune/verification.h"

namespace steptp::dataset {
namespace {

// The first `n` steps of a trace as one comparable string (their JSON).
std::string trace_key(const strategies::Trace& t, size_t n) {
  std::string key;
  for (size_t k = 0; k < n && k < t.size(); ++k) key += strategies::step_to_json(t[k]).dump();
  return key;
}

}  // namespace

std::vector<search::Transition> tuned_transitions(const tune::TuneResult& r, uint64_t verify_seed,
                                                  double improve_threshold, tune::ObservationStore* store,
                                                  search::SearchStats* stats) {
  const strategies::Trace& path = r.best_trace;
  const size_t L = path.size();
  // The states of the path.
  std::vector<leir::Program> states{r.root};
  std::vector<strategies::AppliedStep> applied;
  for (size_t k = 0; k < L; ++k) {
    applied.push_back(strategies::resolve_step(states[k], path[k]));
    states.push_back(applied.back().candidate.program);
  }
  // The replayed path must end at the program the tuner measured (a trace is replayable by
  // contract); anything else would describe a program nobody timed.
  if (leir::program_to_text(states.back(), false) != leir::program_to_text(r.best, false))
    throw strategies::ReplayError("the best trace does not replay to the tuner's best program");
  // The learned model's prediction for each measured candidate (by its trace).
  std::map<std::string, double> predicted;
  for (const auto& t : r.history)
    if (t.learned)  // else selected by the cold-start prior, not a learned prediction
      predicted.emplace(trace_key(t.trace, t.trace.size()), t.predicted);
  std::vector<search::Cost> state_cost;
  for (const auto& s : states) state_cost.push_back(search::model_cost(s));
  std::vector<search::Transition> out;
  // One transition: `step` (applied as `a`) from the state numbered `state`, the program `parent`
  // reached from the root by `prefix`.
  auto add = [&](int state, const strategies::Trace& prefix, const leir::Program& parent,
                 const search::Cost& parent_cost, const strategies::TraceStep& step, strategies::AppliedStep a) {
    search::Transition t;
    t.depth = int(prefix.size()) + 1;
    t.state = state;
    for (const auto& p : prefix) t.steps_so_far.push_back({p.strategy, p.params});
    t.strategy = step.strategy;
    t.site_index = int(a.site_index);
    t.site = std::move(a.site);
    t.params = a.candidate.params;
    t.exactness = a.candidate.exactness;
    t.parent = parent;
    t.result = std::move(a.candidate.program);
    t.result_hash = leir::program_hash(t.result);
    // Costs are the analytic model's, as in the beam search's records (what the CoT quotes as
    // "the cost model"); the measured ones replace them when the records are re-measured.
    t.cost_root = state_cost[0];
    t.cost_parent = parent_cost;
    t.cost_result = search::model_cost(t.result);
    t.improving = t.cost_result.value > 0 && t.cost_parent.value / t.cost_result.value >= improve_threshold;
    const std::string key = trace_key(prefix, prefix.size()) + trace_key({step}, 1);
    if (auto it = predicted.find(key); it != predicted.end()) t.learned_speedup_vs_root = std::exp2(it->second);
    out.push_back(std::move(t));
  };
  auto path_prefix = [&](size_t k) { return strategies::Trace(path.begin(), path.begin() + long(k)); };
  for (size_t k = 0; k < L; ++k) {
    add(int(k), path_prefix(k), states[k], state_cost[k], path[k], applied[k]);
    auto& t = out.back();
    t.chosen = true;
    t.path_step = int(k) + 1;
    t.path_length = int(L);
    t.path_speedup = r.speedup;
  }
  // Each path state's speedup over the root in the tuner's sessions, where it measured the state.
  std::vector<std::optional<double>> state_speedup{1.0};
  for (size_t k = 0; k < L; ++k) state_speedup.push_back(r.trajectory[k].speedup_vs_root);
  // The measured trials by their trace.
  std::map<std::string, const tune::Trial*> measured;
  for (const auto& trial : r.history)
    if (trial.ok && !trial.trace.empty()) measured.emplace(trace_key(trial.trace, trial.trace.size()), &trial);
  // Measured steps, each result once, in trial order: one step off the path (alternatives at its
  // states), and from every other state the tuner measured (a trial whose trace less its last step
  // is a measured trial too). The latter are states numbered after the path's, in order of first
  // appearance; each costs the records one comparison (parent -> result) and no trial.
  std::set<uint64_t> seen;
  for (const auto& t : out) seen.insert(t.result_hash);
  struct OffState {
    int id;
    leir::Program program;
    search::Cost cost;
  };
  std::map<std::string, OffState> off_states;
  std::vector<std::string> path_keys;  // trace_key(path, k) for k = 0..L
  for (size_t k = 0; k <= L; ++k) path_keys.push_back(trace_key(path, k));
  for (const auto& trial : r.history) {
    if (!trial.ok || trial.trace.empty()) continue;
    const size_t k = trial.trace.size() - 1;
    const strategies::Trace prefix(trial.trace.begin(), trial.trace.begin() + long(k));
    const std::string prefix_key = trace_key(prefix, k);
    const bool on_path = k <= L && prefix_key == path_keys[k];
    auto parent_trial = measured.find(prefix_key);
    if (!on_path && parent_trial == measured.end()) continue;
    try {
      const OffState* off = nullptr;
      if (!on_path) {
        auto it = off_states.find(prefix_key);
        if (it == off_states.end()) {
          leir::Program p = strategies::replay(r.root, prefix);
          search::Cost c = search::model_cost(p);
          it = off_states.emplace(prefix_key, OffState{int(L) + 1 + int(off_states.size()), std::move(p), c}).first;
        }
        off = &it->second;
      }
      const leir::Program& parent = on_path ? states[k] : off->program;
      strategies::AppliedStep a = strategies::resolve_step(parent, trial.trace[k]);
      if (!seen.insert(leir::program_hash(a.candidate.program)).second) continue;
      add(on_path ? int(k) : off->id, prefix, parent, on_path ? state_cost[k] : off->cost, trial.trace[k], std::move(a));
    } catch (const strategies::ReplayError&) {
      continue;  // cannot happen for a trace the search built; skip rather than guess
    }
    const std::optional<double> parent_speedup =
        on_path ? state_speedup[k] : std::optional<double>(parent_trial->second->cmp.speedup);
    if (parent_speedup)
      out.back().tuner_faster = tune::clears_noise(trial.cmp) && trial.cmp.speedup / *parent_speedup >= improve_threshold;
  }
  // Verify every result against the root (one batch). The tuner verified each candidate it
  // measured with this very verifier (root, seed): those verdicts are facts in its store, so they
  // are read back rather than recomputed (at bench shapes each is a compiled f64 build).
  tune::RootVerifier verifier(r.root, verify_seed);
  std::vector<tune::Verification> verdicts;
  if (store) {
    std::vector<std::string> texts;
    for (const auto& t : out) texts.push_back(leir::program_to_text(t.result, false));
    std::vector<tune::Subject> subjects;
    for (size_t i = 0; i < out.size(); ++i) subjects.push_back({&out[i].result, &texts[i]});
    verdicts = tune::stored_verifications(*store, verifier, leir::program_to_text(r.root, false), subjects, verify_seed);
  } else {
    std::vector<const leir::Program*> results;
    for (const auto& t : out) results.push_back(&t.result);
    verdicts = verifier.check(results);
  }
  std::vector<search::Transition> verified;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].report = std::move(verdicts[i].report);
    if (stats) stats->candidates++;
    if (!verdicts[i].verified) {
      if (stats) stats->failed++;
      continue;
    }
    if (stats) stats->verified++;
    verified.push_back(std::move(out[i]));
  }
  if (stats) stats->states = int(L) + 1 + int(off_states.size());
  return verified;
}

}  // namespace steptp::dataset
