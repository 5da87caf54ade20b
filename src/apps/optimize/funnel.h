// `steptp optimize`'s judge: the reward's one funnel (apps/reward/reward.h judge_answer: parsed → valid
// LEIR → differs from the parent (canonical form) → verified equivalent to the root → compiles
// (and runs) → faster than the parent by the noise rule and `faster_ratio`), with the tuner's
// verifier and timer plugged in and a cache around them:
//
// - verification is the tuner's (search/tune/verification.h: the interpreter at small sizes, compiled
//   f64 builds at bench sizes) through the store's verdicts; "inconclusive" fails the
//   equivalence stage but is counted apart;
// - timing is the tuner's one timing policy through the store (search/tune/observations.h): the candidate timed
//   against the root, interleaved; its speedup over the parent is the ratio of the two speedups
//   over the root, judged by tune::clears_noise with the two candidates' spreads. The timed
//   kernel's outputs are not compared again here (the store keeps timings, not outputs): at
//   bench shapes the verification itself runs compiled builds (f64) of root and candidate;
// - candidates are cached by canonical hash (ir/leir/canonical.h): a program reached again (from
//   another parent, proposed twice, or renamed) reuses its verdict and timing and costs no
//   measurement budget; with no measurement left a verified candidate stops unmeasured.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "apps/optimize/budget.h"
#include "apps/reward/reward.h"
#include "search/tune/database.h"
#include "search/tune/observations.h"
#include "search/tune/runner.h"
#include "search/tune/verification.h"

namespace steptp::optimize {

struct FunnelOptions {
  uint64_t verify_seed = 0;
  double faster_ratio = 1.05;  // reward.h's improve_threshold
};

struct Outcome {
  std::optional<reward::Stage> failed;  // the first stage not passed; nullopt: passed them all
  std::string reason;                   // why it failed there
  bool inconclusive = false;            // failed equivalence with verdict "inconclusive"
  bool budget_stop = false;             // verified, but no measurement was left: not measured
  bool cached = false;                  // verdict and timing reused by canonical hash
  std::string form, strategy;           // "ir" | "action" | "choice"
  std::optional<leir::Program> program; // valid candidates
  std::string text;                     // canonical text
  uint64_t hash = 0;
  nlohmann::json step;                  // {"strategy","params"} (as steps_so_far lists it)
  bool measured = false;
  double speedup_vs_root = 0;           // measured
  bool clears_noise = false;            // measured faster than the root by the noise rule (tune::clears_noise)
  std::string infrastructure_failure;   // not judged: the measurement could not take place (reward.h)
  // The stage names passed, in order.
  int stages_passed() const { return failed ? int(*failed) : reward::kStageCount; }
};
nlohmann::json to_json(const Outcome& o);

class Funnel {
 public:
  Funnel(const leir::Program& root, tune::ObservationStore& store, tune::Runner& runner, FunnelOptions o);
  // `parent_speedup`: the parent's measured speedup over the root (1 for the root).
  Outcome evaluate(const leir::Program& parent, double parent_speedup, const std::string& answer, Spend& spend);
  const std::string& root_text() const { return root_text_; }
  const std::string& verification_method() const { return verifier_.method(); }

 private:
  struct Facts {
    nlohmann::json verdict;
    std::optional<tune::PairResult> timing;
  };
  leir::Program root_;
  std::string root_text_;
  uint64_t root_hash_;  // canonical
  tune::ObservationStore& store_;
  tune::Comparer comparer_;
  tune::RootVerifier verifier_;
  FunnelOptions o_;
  std::map<uint64_t, Facts> cache_;  // by canonical hash
};

}  // namespace steptp::optimize
