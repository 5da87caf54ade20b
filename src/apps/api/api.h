// The command layer: check, verify, apply, lower, run, bench, measure and score, each implemented
// once here and called by every front end — the CLI's subcommands (src/driver/cli), serve's jobs
// (src/apps/serve/jobs.cc) and the Python bindings (python/bindings). A command takes a plain
// request (programs already read and, where the front end requires it, validated) and returns a
// result; it parses no arguments, speaks no HTTP and prints nothing. How a result is written
// (text lines, an HTTP body, Python objects) and how a front end words a request error stay with
// the front end, so each keeps its own output.
//
// Errors: a program a backend rejects throws leir::LeirError, a failed run interp::RuntimeError, a
// site or parameters the program lacks and an unknown run target base::Error (BadRequest); other
// failures as the libraries below throw them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/reward/reward.h"
#include "apps/reward/timing.h"
#include "ir/interp/inputs.h"
#include "ir/leir/ast.h"
#include "ir/leir/validate.h"
#include "ir/leir/values.h"
#include "ir/verify/verifier.h"
#include "lower/measure/measure.h"
#include "lower/tir/tvmscript.h"
#include "transform/strategy.h"

namespace steptp::api {

// ---- check: static validation (LEIR.md §3-4) ----

struct CheckRequest {
  leir::Program program;
  bool identity = false;  // also the program's hash and canonical text (when valid)
};
struct CheckResult {
  leir::ValidationReport report;
  std::string hash;       // base::hex64(leir::program_hash), when valid and asked for
  std::string canonical;  // leir::program_to_text, when valid and asked for
};
CheckResult check(CheckRequest request);

// ---- verify: is B equivalent to A (LEIR.md §5)? ----

struct VerifyRequest {
  leir::Program a, b;
  verify::VerifyOptions options;
  // One run on these values (keyed by name: leir::key_by_name) instead of the seeded input sets.
  std::optional<leir::TensorMap> inputs;
};
verify::VerifyReport verify(const VerifyRequest& request);
// verify::to_json of the report, plus "error" when it has one.
nlohmann::json verify_json(const verify::VerifyReport& report);

// ---- apply: one strategy's results ----

struct ApplyRequest {
  leir::Program program;
  // The strategy (strategies::find_strategy: each front end words "unknown strategy" its own way).
  const strategies::Strategy* strategy = nullptr;
  std::optional<int> site;  // sample at this site only; with `params`, the site (default 0)
  // Apply exactly these parameters at `site` (reward::apply_action) instead of sampling.
  std::optional<nlohmann::json> params;
  bool all = false;  // sample every site (as does `site`); neither: one seeded candidate
  int samples = 3;   // parameter choices per site when sampling sites
  uint64_t seed = 0; // of the sampler and of the verifier
  bool verify = true;  // keep only results verified equivalent to `program`
  bool explain = false;  // fill ApplyResult::sites and refusals
};
struct Applied {
  strategies::Candidate candidate;
  nlohmann::json params;                 // the request's params, else the candidate's as JSON
  std::optional<verify::VerifyReport> verdict;  // when verified
};
struct ApplyResult {
  std::vector<Applied> results;  // in sampling order; verified equivalent ones only when verifying
  std::vector<Applied> dropped;  // verified, not equivalent (failed or inconclusive)
  size_t site_count = 0;         // the strategy's legal sites in the program
  std::vector<strategies::Site> sites;        // with `explain`
  std::vector<strategies::Refusal> refusals;  // with `explain`
};
ApplyResult apply(ApplyRequest request);
// {"strategy", "site", "params", "class", "verdict"?} of one result (the JSON the CLI prints and the
// Python dict, each with its program added).
template <class Json>
Json applied_json(const Applied& a);

// ---- lower: the source a backend generates ----

enum class LowerTarget { Cpu, Cuda, Tir };
std::optional<LowerTarget> lower_target(std::string_view name);  // "cpu", "cuda", "tir"
struct LowerRequest {
  leir::Program program;
  LowerTarget target = LowerTarget::Cpu;
  bool f64 = false;                // cpu: the all-float64 verification build
  backend::tir::TirOptions tir;    // tir: dialect, cpu_compatible
};
// The prelude and kernel (cpu, cuda) or the TVMScript module (tir); throws leir::LeirError when the
// target rejects the program.
std::string lower(const LowerRequest& request);

// ---- run: a program's outputs ----

enum class RunTarget { Interp, Cpu };
// "interp" or "cpu"; else throws base::Error (BadRequest) naming the choices.
RunTarget run_target(const std::string& name);
struct RunRequest {
  leir::Program program;
  RunTarget target = RunTarget::Interp;
  // Every input and param (keyed by name); absent: generated from `seed` with `profile`.
  std::optional<leir::TensorMap> inputs;
  uint64_t seed = 0;
  interp::InputProfile profile = interp::InputProfile::Ordinary;
  bool intermediates = false;  // interp: also the intermediates
  bool allow_unset = false;    // interp: unset output elements as nan instead of an error
};
// Throws interp::RuntimeError for a failed run (out-of-range index, unset read, race).
leir::TensorMap run(const RunRequest& request);

// ---- bench: in-process CPU timing (the CLI's `bench`) ----

struct BenchRequest {
  std::vector<leir::Program> programs;  // one, or two with the same signature (the second against the first)
  bool vs_scalar_math = false;  // one program: with scalar math calls against itself with vector math
  backend::MeasureOptions options;
  uint64_t seed = 0;  // of the generated inputs
};
struct BenchResult {
  std::vector<std::string> names;  // of the timed programs, in order ("NAME (scalar math)" for the first with vs_scalar_math)
  backend::TimingStats stats;      // one program
  std::optional<backend::Comparison> comparison;  // two: a = first, b = second
};
BenchResult bench(BenchRequest request);

// ---- measure and score: through the one timing policy (apps/reward/timing.h) ----

// Runs `timed` holding the machine: serve waits for its timing lock with a deadline and tells its
// supervisor; the default (empty) differs per command, below.
using HoldMachine = std::function<void(const std::function<void()>& timed)>;

struct MeasureRequest {
  leir::Program program;
  std::optional<leir::Program> baseline;  // `program` is timed against it (default: `program` itself)
  reward::MeasureSettings settings;
};
struct MeasureResult {
  std::string signature_difference;  // not empty: the signatures differ and nothing was timed
  reward::MeasuredPair pair;         // a = baseline (or program), b = program
};
// `hold` empty: the timing policy takes the lock itself, around the timed runs only.
MeasureResult measure(const MeasureRequest& request, const HoldMachine& hold = {});

struct ScoreRequest {
  std::string answer;
  reward::Context context;
  bool measure = true;  // false: stop after verification
  int verify_trials = 3;
  uint64_t verify_seed = 0;
  reward::MeasureSettings settings;  // its input_seed is the reply's
  std::string peaks_path;            // machine peaks cache; empty: no implausibility check
};
struct ScoreHooks {
  std::function<std::string(const leir::Program& candidate)> admissible;  // reward::ScoreOptions'
  std::function<void(const nlohmann::json& partial)> on_progress;          // reward::ScoreOptions'
  HoldMachine hold;  // empty: a tune::TimingLock without deadline (cached_peaks may measure the machine)
  // Called holding the machine just before the answer's kernel is timed, with the program to time
  // (serve: a progress notice and, in its fault-injection tests, a fault).
  std::function<void(leir::Program& timed)> before_kernel_run;
};
// reward::score's reply plus "verify_seed" and "input_seed".
nlohmann::json score(const ScoreRequest& request, const ScoreHooks& hooks = {});

}  // namespace steptp::api
