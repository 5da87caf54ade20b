// The verification funnel every proposal goes through (the stages of reward/reward.h):
//
//   parsed → valid LEIR → differs from the parent → verified equivalent to the root
//          → compiles (and runs) → measured, and faster than the parent
//
// Parsing and the candidate program are reward/'s (one parser for serve, optimize and the Python
// package); an invalid program's reason carries its file:line:col. Verification is the tuner's
// (tune/verification.h: the interpreter at small sizes, compiled f64 builds at bench sizes);
// "inconclusive" fails the equivalence stage but is counted apart. Measurement is the tuner's
// one timing policy through the store (tune/facts.h): the candidate timed against the root,
// interleaved. "Faster": its speedup over the root exceeds its parent's by `faster_ratio`.
//
// Candidates are cached by canonical hash: a program reached again (from another parent, or
// proposed twice) reuses its verdict and timing and costs no measurement budget.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "leir/ast.h"
#include "optimize/budget.h"
#include "reward/reward.h"
#include "tune/database.h"
#include "tune/facts.h"
#include "tune/runner.h"
#include "tune/verification.h"

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
  std::string form, strategy;           // "ir" | "action"
  std::optional<leir::Program> program; // valid candidates
  std::string text;                     // canonical text
  uint64_t hash = 0;
  nlohmann::json step;                  // {"strategy","params"} (as steps_so_far lists it)
  bool measured = false;
  double speedup_vs_root = 0;           // measured
  bool clears_noise = false;            // measured faster than the root by the noise rule (tune::clears_noise)
  // The stage names passed, in order.
  int stages_passed() const { return failed ? int(*failed) : reward::kStageCount; }
};
nlohmann::json to_json(const Outcome& o);

class Funnel {
 public:
  Funnel(const leir::Program& root, tune::MeasurementStore& store, tune::Runner& runner, FunnelOptions o);
  Outcome evaluate(const leir::Program& parent, uint64_t parent_hash, double parent_speedup,
                   const std::string& answer, Spend& spend);
  const std::string& root_text() const { return root_text_; }
  const std::string& verification_method() const { return verifier_.method(); }

 private:
  struct Facts {
    nlohmann::json verdict;
    std::optional<tune::PairResult> timing;
  };
  leir::Program root_;
  std::string root_text_;
  tune::MeasurementStore& store_;
  tune::Comparer comparer_;
  tune::RootVerifier verifier_;
  FunnelOptions o_;
  std::map<uint64_t, Facts> cache_;
};

}  // namespace steptp::optimize
