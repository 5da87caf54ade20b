// `steptp tune`: measurement-guided search from one root program (issue 13).
//
// Rounds of EvolutionarySearch (expand, rank with the cost model, select) → verify each selected
// candidate against the root (search/tune/verification.h; a candidate that is not `equivalent` is
// dropped) → time it against the root in one interleaved session (search/tune/runner.h) → retrain the
// cost model on every measurement so far — until `trials` candidates have been tried (verified or
// not: each selected candidate is one trial) or `time_limit_s` has passed.
//
// The three best candidates are then timed again against the root in a fresh session and the
// best confirmed one is the result (so one lucky measurement cannot win). Then the best-found
// program's trace is timed step by step (each step's result against its
// parent, interleaved): which steps were faster on their own and which only enabled later ones.
// These comparisons are not trials.
//
// Determinism: every measurement and verification verdict is a fact in the store (keyed by the
// runner's identity — machine fingerprint, options — and the programs' texts). Given the same
// root, options, seed and a store that already holds every fact the run needs, the result is a
// pure function of them: a rerun writes identical bytes, and a run killed at any point resumes
// (it replays the rounds, finds the facts stored so far and measures only the rest) and ends
// equal to a rerun on its final store. A time limit is the exception: where it stops depends on
// the clock (rerun with --trials equal to the trials it reached to reproduce it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "search/tune/machine.h"
#include "search/tune/roofline.h"
#include "search/tune/runner.h"
#include "search/tune/search_strategy.h"
#include "transform/trace.h"

namespace steptp::tune {

struct TuneOptions {
  int trials = 64;
  double time_limit_s = 0;  // 0: none
  int threads = 0;          // timed OpenMP threads; 0: all cores
  uint64_t seed = 0;
  std::string store_path;   // SQLite measurement store (created if missing)
  EvolutionaryOptions search;  // its seed is derived from `seed`
  backend::MeasureOptions measure{.warmup = 2, .min_time_s = 0.1, .min_repeats = 5, .max_time_s = 2.0,
                                  .stable_rel = 0.02};
  bool time_trajectory = true;  // time the best trace step by step
  bool roofline = true;         // time the copy of the root's unavoidable bytes (TuneResult::roofline)
  Runner* runner = nullptr;     // null: a CpuRunner with `measure` and `threads`
  // A pre-trained cost model file (search/tune/cost_model.h PretrainedModel, `steptp cost-model
  // train`) the per-root model starts from and fine-tunes; empty: none (the analytic prior, then
  // a model trained from scratch). It must be of this run's machine kind (base::Error Invalid).
  std::string cost_model;
  // The workload the kept candidates are filed under (the store's `candidates`, database.h): a
  // cost model's training holds workloads out by it. Empty: the root's name (a task's session is
  // given its program's name).
  std::string workload;
};

struct Progress {
  int trials = 0, budget = 0, round = 0;
  double root_ms = 0, best_ms = 0, speedup = 1;
};

struct StepTiming {
  bool measured = false;
  double speedup_vs_parent = 1;  // median(parent) / median(step result), one session
  bool faster = false;           // clears_noise
  std::optional<double> speedup_vs_root;  // when the search measured this state
};

struct Trial {
  int node = 0, round = 0;
  std::string strategy_path;  // "loop_reorder > loop_tiling > ..."
  strategies::Trace trace;    // the candidate's steps from the root
  uint64_t hash = 0;          // leir::program_hash of the candidate (its text: the store's `candidates`)
  bool verified = false, ok = false;
  std::string error;          // why not verified / not measured
  double predicted = 0;       // model's log2 speedup at selection
  bool learned = false;       // ... by the trained model (false: the analytic cold-start prior)
  backend::Comparison cmp;    // a = root, b = candidate
};

struct TuneResult {
  leir::Program root, best;
  strategies::Trace best_trace;
  std::vector<StepTiming> trajectory;  // one per best_trace step
  double root_ms = 0, best_ms = 0, speedup = 1;
  int trials = 0, measured = 0, not_verified = 0, failed = 0;
  std::vector<Trial> history;
  SearchStats search;
  std::string verification;  // method
  Machine machine;
  nlohmann::json cost_model;  // ranking quality on held-out trials: learned vs analytic (vs pre-trained)
  std::optional<Roofline> roofline;  // when the runner times (not the model runner, not a fake)
  nlohmann::json tasks;  // tuned as tasks (search/tune/task_scheduler.h): {"unit", "list"}; null otherwise
  // Reporting only (never in the deterministic files):
  int measured_now = 0, reused = 0;
  double wall_s = 0;
};

class ObservationStore;

// One root's search, advanced a round at a time: tune() runs it to its budget; the task scheduler
// (search/tune/task_scheduler.h) interleaves the sessions of a program's tasks on one store and
// runner. `o.trials` and `o.time_limit_s` are the caller's to enforce; `o.runner` is ignored.
class TuneSession {
 public:
  TuneSession(const leir::Program& root, const TuneOptions& o, ObservationStore& store, Runner& runner,
              const Machine& m);
  ~TuneSession();
  TuneSession(const TuneSession&) = delete;
  TuneSession& operator=(const TuneSession&) = delete;

  // One round of at most `limit` trials; returns the trials it spent (0: nothing is left to try).
  int round(int limit);
  // Confirmation of the best, its step timings and the roofline (as `o` asks): the result
  // (wall_s left 0).
  TuneResult finish();

  int trials() const;
  double root_ms() const;  // the root's time in its first session (0 before a measurement)
  double best_ms() const;  // root_ms() over the search's best speedup so far
  Progress progress() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// The CpuRunner tune() uses when TuneOptions::runner is null.
std::unique_ptr<Runner> default_runner(const TuneOptions& o, const Machine& m);
// The roofline of `root` (its copy time a fact in `store`); nullopt when the runner times nothing.
std::optional<Roofline> measure_roofline(ObservationStore& store, Runner& runner, const leir::Program& root,
                                         double root_ms, double best_ms, int threads);

// Throws base::Error (Failed: store, XGBoost) and leir::LeirError (invalid root).
TuneResult tune(const leir::Program& root, const TuneOptions& o,
                const std::function<void(const Progress&)>& progress = {});

// The deterministic summary (everything but wall time and store reuse counts).
nlohmann::json result_json(const TuneResult& r);
// The best trace as JSON steps with their timings.
nlohmann::json trajectory_json(const TuneResult& r);

}  // namespace steptp::tune
