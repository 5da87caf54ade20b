// The reward of an assistant answer to a dataset prompt, shared by `steptp serve` (/v1/score)
// and `steptp optimize`: the answer goes through the funnel
//
//   parsed → valid LEIR → differs from the parent → verified equivalent to the root
//          → compiles (and runs) → measured faster than the parent
//
// and its reward is the sum of documented parts (each answer; a multi-answer list scores the
// mean of its answers, an answer repeating an earlier one of the list scores as unchanged):
//
//   format       -1.0   the answer does not parse (no <answer>, bad JSON, not a step)  → stop
//   validity     -0.75  the step's program is not valid LEIR / the action does not apply → stop
//   (unchanged)   0     the program is the parent's (canonical hash): no credit, no blame → stop
//   equivalence  -0.5   not verified equivalent to the root (failed, or any verdict other than
//                       equivalent, e.g. "inconclusive", which the funnel counts apart)  → stop
//                +0.1   verified equivalent to the root
//   compiles     +0.1   compiled by the CPU backend and ran in the sandbox (0: it did not → stop)
//   speedup      0.8 * clamp(log2(speedup over the parent), -1, 1); 0 when not measured or when
//                the speedup is implausible (below)
//
// so reward ∈ [-1, 1]: 1.0 for an equivalent step that halves the parent's time, 0.2 for an
// equivalent step of the same speed. Speedup over the root is reported, never rewarded (a step
// is judged where it starts).
//
// Anti reward-hacking: the program is always steptp's own lowering of LEIR (no code from the
// answer runs), verification draws fresh inputs per trial from the caller's seed (the service
// draws it at random per request and reports it) and compares every output element with the
// root's (verify/verifier.h), measurement inputs are fresh too, a program identical to the parent
// earns nothing, and a time below what the machine's measured peaks allow for the program's
// flops and input/output bytes is flagged `implausible` and earns no speedup credit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "backend/measure/measure.h"
#include "leir/ast.h"
#include "reward/answer.h"
#include "reward/timing.h"

namespace steptp::reward {

// What the reward needs from a prompt: the root program (equivalence) and the parent (the state
// the step starts from). `steptp generate` writes it into every chat record as the field
// "reward_context" (docs/dataset.md): {"root_program": LEIR, "parent_program": LEIR, ...}.
struct Context {
  leir::Program root, parent;
};
// Throws std::invalid_argument (missing/mistyped field, naming it) or leir::LeirError (a program
// that does not parse or validate, with line:col inside that field).
Context parse_context(const nlohmann::json& reward_context);

// `p` itself when it validates; else throws leir::LeirError with its first error, `field` as file.
leir::Program require_valid(leir::Program p, const std::string& field);

// The funnel stages in order; an answer's `failed_stage` is the first it did not pass.
enum class Stage : uint8_t { Parsed, Valid, Differs, Equivalent, Compiles, Faster };
inline constexpr int kStageCount = 6;
std::string_view to_string(Stage s);  // "parsed", "valid", "differs", "equivalent", "compiles", "faster"

struct ScoreOptions {
  int verify_trials = 3;
  uint64_t verify_seed = 0;  // the service draws it fresh per request
  bool measure = true;       // false: stop after verification (compiles/speedup parts stay 0)
  double improve_threshold = 1.05;  // speedup over the parent from which "faster" is passed
  // Times the candidate against parent and root (timing.h); the service wraps it with the
  // machine-wide measurement lock. Empty: measure_step with default options.
  std::function<MeasuredStep(const Context&, const leir::Program& candidate)> measurer;
  // Called as each answer enters a stage, so a supervisor knows where a crash hit:
  // {"answer": i, "of": n, "done": [outcomes of answers < i], "partial": outcome so far + "entering"}.
  std::function<void(const nlohmann::json& partial)> on_progress;
};

// The candidate program of one step: the IR parsed (body-only IR gets the parent's signature) or
// the action applied. Returns the error (with line:col for IR) when it is not valid.
struct Candidate {
  std::optional<leir::Program> program;
  std::string error;
  std::string strategy;  // the strategy the step names (IR form: as claimed, unchecked)
};
Candidate candidate_program(const leir::Program& parent, const Step& step);

// Applies strategy `name` at site `site` with `params` (nullopt: the site's first choice).
// Returns the program or throws std::invalid_argument saying why it does not apply.
leir::Program apply_action(const leir::Program& parent, const std::string& name, int site,
                           const std::optional<nlohmann::json>& params);

// {"reward", "parsed", "reason" (when not parsed), "list", "answers": [outcome...]} where an
// outcome is {"reward", "parts": {format, validity, equivalence, compiles, speedup},
// "failed_stage": stage or null, "inconclusive": bool, "reason", "form", "strategy",
// "candidate_hash", "verification", "measurement": {...}, "speedup_vs_parent",
// "speedup_vs_root", "implausible"}. Never throws for a bad answer.
nlohmann::json score(const Context& ctx, std::string_view answer_text, const ScoreOptions& o);

// The outcome of an answer whose scoring died at `stage` (a crash, hang or memory exhaustion of
// the sandbox running it): `partial` is the last progress report, completed as a failure.
nlohmann::json failed_outcome(nlohmann::json partial, std::string_view stage, const std::string& reason);

// The reward parts' values (documented above).
struct RewardParts {
  static constexpr double kParseFail = -1.0, kInvalid = -0.75, kNotEquivalent = -0.5;
  static constexpr double kEquivalent = 0.1, kCompiles = 0.1, kSpeedupScale = 0.8;
};

}  // namespace steptp::reward
