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
//   (unchanged)   0     the program is the parent's up to its canonical form (ir/leir/canonical.h:
//                       renamed loops and intermediates, commuted operands, folded +0, *1, ...)
//                       or repeats an earlier answer of the list: no credit, no blame  → stop
//   equivalence  -0.5   not verified equivalent to the root (failed, or any verdict other than
//                       equivalent, e.g. "inconclusive", which the funnel counts apart), or the
//                       compiled kernel's outputs differ from the root kernel's  → stop
//                +0.1   verified equivalent to the root
//   compiles     +0.1   compiled by the CPU backend and ran in the sandbox (0: it did not → stop)
//   speedup      0.8 * clamp(log2(speedup over the parent), -1, 1) when the timing policy's noise
//                rule (tune::clears_noise) says the difference is real, either way; 0 when it is
//                within the noise, not measured, or implausible (below)
//
// so reward ∈ [-1, 1]: 1.0 for an equivalent step that halves the parent's time, 0.2 for an
// equivalent step of the same speed. Speedup over the root is reported, never rewarded (a step
// is judged where it starts). "Faster" is passed at a speedup over the parent of at least
// `improve_threshold` that clears the noise.
//
// No score: when the judgement could not be made for a reason that is not the answer's (the
// measurement could not take place: the machine not obtained, the measuring child not started;
// in the service also a time-out or memory exhaustion outside the answer's kernel run) the
// reward is null and "infrastructure_failure" says why: a trainer leaves the sample out. A kernel
// that crashes, hangs or exhausts memory while it runs is the answer's: a failure at "compiles".
//
// Defences against reward hacking (docs/serve.md "Anti reward-hacking" sets them beside the
// known hacks): no code from the answer runs (steptp's own lowering of LEIR); verification on
// fresh inputs per request (the caller's seed; the service draws it) against the root, every
// output element; "differs" on the canonical form, so no-op edits earn 0 (KernelGYM's "lazy
// optimization"); the timed kernel's outputs compared with the root kernel's on the timing
// inputs before any speedup is paid (a codegen bug is not a speedup); speedup paid only when it
// clears the noise; times below what the machine's measured peaks allow for the program's flops
// and input/output bytes are `implausible` and earn no speedup credit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lower/measure/measure.h"
#include "ir/leir/ast.h"
#include "apps/reward/answer.h"
#include "apps/reward/timing.h"

namespace steptp::reward {

// What the reward needs from a prompt: the root program (equivalence) and the parent (the state
// the step starts from). `steptp generate` writes it into every chat record as the field
// "reward_context" (docs/dataset.md): {"root_program": LEIR, "parent_program": LEIR, ...}.
struct Context {
  leir::Program root, parent;
};
// Throws base::Error (BadRequest: a missing/mistyped field, naming it) or leir::LeirError (a program
// that does not parse or validate, with line:col inside that field).
Context parse_context(const nlohmann::json& reward_context);

// `p` itself when it validates; else throws leir::LeirError with its first error, `field` as file.
leir::Program require_valid(leir::Program p, const std::string& field);

// The funnel stages in order; an answer's `failed_stage` is the first it did not pass.
enum class Stage : uint8_t { Parsed, Valid, Differs, Equivalent, Compiles, Faster };
inline constexpr int kStageCount = 6;
std::string_view to_string(Stage s);  // "parsed", "valid", "differs", "equivalent", "compiles", "faster"

// The verifier and the timer are plugged into the one funnel below: serve and the Python package
// verify with verify::verify and time with measure_step (score()), `steptp optimize` with the
// tuner's stored verdicts and timings behind its canonical-hash cache (apps/optimize/funnel.h).
struct Verdict {
  bool equivalent = false;
  std::string verdict;  // "exact" | "reassoc" | "failed" | "inconclusive"
  std::string error;    // why, beyond the verdict (may be empty)
  nlohmann::json report = nullptr;  // verify::to_json of the report, when there is one
};
struct Judge {
  // The candidate (valid, differing from the parent) against the root.
  std::function<Verdict(const leir::Program& candidate, uint64_t canonical_hash)> verify;
  // The candidate timed against the parent (and the root), its compiled outputs checked against
  // the root's; nullopt: not measured (no measurement asked for, or none left). Empty: never.
  std::function<std::optional<MeasuredStep>(const leir::Program& candidate, uint64_t canonical_hash)> measure;
  double improve_threshold = 1.05;  // speedup over the parent from which "faster" is passed
  bool single_step = false;         // a list of steps is a format failure (optimize asks for one)
  // Why a valid candidate may still not be judged ("" when it may): a service's size limits. An
  // answer over them fails at `valid` — scored, so that a huge program cannot turn the time-out
  // it would cause into "no score".
  std::function<std::string(const leir::Program& candidate)> admissible;
  // Called as each answer enters a stage, so a supervisor knows where a crash hit:
  // {"answer": i, "of": n, "done": [outcomes of answers < i], "partial": outcome so far + "entering"}.
  std::function<void(const nlohmann::json& partial)> on_progress;
};

// One step's judgement: its outcome (score()'s answers[i]) and the candidate behind it.
struct Judgement {
  AnswerStep step;  // as answered; a choice in the menu's range as the action it names (choice_action)
  nlohmann::json outcome;
  std::optional<leir::Program> program;  // the candidate, when valid
  uint64_t canonical_hash = 0;           // leir::canonical_hash of it
  std::optional<MeasuredStep> measured;  // when measured
};

// The funnel: score()'s reply for `answer_text` as a step from `parent`, each step's judgement
// in `steps` when given. Never throws for a bad answer.
nlohmann::json judge_answer(const leir::Program& parent, std::string_view answer_text, const Judge& j,
                            std::vector<Judgement>* steps = nullptr);

struct ScoreOptions {
  int verify_trials = 3;
  uint64_t verify_seed = 0;  // the service draws it fresh per request
  bool measure = true;       // false: stop after verification (compiles/speedup parts stay 0)
  double improve_threshold = 1.05;  // speedup over the parent from which "faster" is passed
  // Times the candidate against parent and root (timing.h); the service wraps it with the
  // machine-wide measurement lock. Empty: measure_step with default options.
  std::function<MeasuredStep(const Context&, const leir::Program& candidate)> measurer;
  std::function<void(const nlohmann::json& partial)> on_progress;  // Judge::on_progress
  std::function<std::string(const leir::Program& candidate)> admissible;  // Judge::admissible
};

// A choice-form step as the action it names: option `step.choice` of the parent's menu
// (apps/dataset/prompt.h choice_options), the option's handle and parameters; nullopt when the menu
// has no such option (`options` gets the menu's size).
std::optional<AnswerStep> choice_action(const leir::Program& parent, const AnswerStep& step, size_t* options = nullptr);

// The candidate program of one step: the IR parsed (body-only IR gets the parent's signature) or
// the action (or the menu choice's action) applied. Returns the error (with line:col for IR) when
// it is not valid.
struct StepProgram {
  std::optional<leir::Program> program;
  std::string error;
  std::string strategy;  // the strategy the step names (IR form: as claimed, unchecked)
};
StepProgram candidate_program(const leir::Program& parent, const AnswerStep& step);

// Applies strategy `name` at site `site` with `params` (nullopt: the site's first choice).
// Returns the program or throws base::Error (BadRequest, field "strategy", "site" or "params")
// saying why it does not apply.
leir::Program apply_action(const leir::Program& parent, const std::string& name, int site,
                           const std::optional<nlohmann::json>& params);

// The funnel with verify::verify and `o.measurer`: {"reward", "parsed", "reason" (when not
// parsed), "list", "answers": [outcome...]} where an outcome is {"reward", "parts": {format,
// validity, equivalence, compiles, speedup}, "failed_stage": stage or null, "inconclusive": bool,
// "reason", "form", "strategy", "candidate_hash" (leir::program_hash, as the dataset's result_hash), "canonical_hash",
// "verification", "measurement":
// {...}, "compiled_outputs", "speedup_vs_parent", "speedup_vs_root", "clears_noise",
// "implausible"}. When the measurement could not take place for a reason that is not the
// answer's (MeasuredStep::infrastructure) the reply is "no score": "reward" null,
// "infrastructure_failure" the reason and "failed_stage" kNoScore (in the reply and in that
// answer's outcome, so the service's failed-stage metric counts it apart). Never throws for a
// bad answer.
nlohmann::json score(const Context& ctx, std::string_view answer_text, const ScoreOptions& o);

// The "failed_stage" of an answer (and of a reply) that was not judged: no score.
inline constexpr const char* kNoScore = "infrastructure";

// The outcome of an answer whose kernel run killed the job running it (a crash, hang or memory
// exhaustion): `partial`, the last progress report, completed as a failure at "compiles".
nlohmann::json failed_outcome(nlohmann::json partial, const std::string& reason);
// The reply of a request that could not be scored for a reason that is not the answer's (the
// service timed out or ran out of memory outside the answer's kernel run, the machine was not
// obtained): "reward" null, "infrastructure_failure" the reason, `answers` (those judged so far,
// and the one that could not be) of `of`.
nlohmann::json no_score(nlohmann::json answers, size_t of, const std::string& reason);

// The reward parts' values (documented above).
struct RewardParts {
  static constexpr double kParseFail = -1.0, kInvalid = -0.75, kNotEquivalent = -0.5;
  static constexpr double kEquivalent = 0.1, kCompiles = 0.1, kSpeedupScale = 0.8;
};

}  // namespace steptp::reward
