// Equivalence verifier (LEIR.md §5): runs two programs of the same signature on several seeded
// input sets with the reference interpreter and compares every output element.
//
// Element rule: |a - b| <= atol + rtol * |b| where b is the element of the reference program
// (the first one), NaN equals NaN, an infinity equals only the same infinity. `atol` is relative
// to the magnitude of the whole output tensor: atol = atol_scale * max|b| over that tensor, so an
// element near zero that results from cancellation in a long sum gets the slack its tensor's
// rounding error really has, while an element that is wrong by a fraction of the tensor's scale
// (off-by-one, dropped term, wrong operator) fails. See tolerance_for() for the per-dtype values.
//
// Evidence (LEIR.md §5). A trial is *evidential* when at least kEvidenceShare (half) of the
// reference's output elements, over all its outputs together, are finite on that trial's inputs:
// NaN = NaN and inf = inf still have to agree position by position on every trial, but they say
// nothing about whether the two programs compute the same function. One evidential trial
// suffices (so `--trials 1` and caller-given inputs work when the data is in-domain); with none
// the verdict is inconclusive, which is never "equivalent". Half, because masked programs
// legitimately produce -inf in a minority of positions (a causal mask leaves n(n+1)/2 of n^2
// scores finite), while the vacuous case this guards against (every log/sqrt argument negative)
// leaves almost nothing finite.
//
// Inputs: trials cycle the profiles Domain, ScaledUp, DomainSmall, Signs (ir/interp/inputs.h). The
// Domain profiles draw the inputs that reach log, sqrt, fractional powers and divisors positive
// and away from zero (ir/interp/domains.h), and equal Ordinary/ScaledDown for every other tensor.
//
// Classification: exact (bit-identical outputs on every trial), reassoc (some element differs but
// every element is within tolerance: floating-point rounding of a reassociated computation),
// failed (an element out of tolerance, an element set by one program only, a run-time error in
// the candidate, or a different signature) or inconclusive (nothing failed, but no trial was
// evidential). Failed takes precedence over inconclusive.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/values.h"

namespace steptp::verify {

enum class Verdict : uint8_t { Exact, Reassoc, Failed, Inconclusive };
std::string_view to_string(Verdict v);  // "exact", "reassoc", "failed", "inconclusive"

// A trial is evidence when at least this share of the reference's output elements is finite.
inline constexpr double kEvidenceShare = 0.5;

struct Tolerance {
  double rtol = 0;
  double atol_scale = 0;  // atol = atol_scale * max|reference| over the output tensor
};

// Per output dtype (documented in verifier.cc):
//   f64: rtol 1e-9, atol_scale 1e-9     f32: rtol 1e-4, atol_scale 1e-4
//   f16: rtol 1e-2, atol_scale 1e-2     bf16: rtol 6e-2, atol_scale 6e-2
//   integers and bool: exact (0, 0)
Tolerance tolerance_for(leir::DType t);

// The element that came closest to (or went furthest past) its tolerance.
struct Worst {
  std::string tensor;
  std::vector<int64_t> index;
  double a = 0, b = 0;  // values of program A (reference) and program B
  double abs_err = 0, rel_err = 0;
  int trial = 0;
  uint64_t seed = 0;  // the input seed of that trial
};

struct VerifyOptions {
  int trials = 4;     // input profiles cycle Domain, ScaledUp, DomainSmall, Signs
  uint64_t seed = 0;  // trial t draws its inputs with seed trial_seed(seed, t)
  bool detect_races = true;  // dynamic P/V/B independence checks while running
  // Overrides of the per-dtype tolerances (negative: use tolerance_for()).
  double rtol = -1;
  double atol_scale = -1;
};

struct VerifyReport {
  bool equivalent = false;  // verdict is Exact or Reassoc (never Inconclusive)
  Verdict verdict = Verdict::Failed;
  int trials = 0;              // trials run to completion
  int evidential = 0;          // of those, trials where the reference's outputs were mostly finite
  double finite_share = 0;     // the largest share of finite reference output elements on any trial
  std::optional<Worst> worst;  // absent when no element differs at all
  std::string error;           // why, when it failed for another reason than a numeric mismatch,
                               // or why it is inconclusive
  bool invalid_reference = false;  // program A itself could not be compiled or run
};

// The input seed of trial t (deterministic, distinct per trial).
uint64_t trial_seed(uint64_t seed, int trial);

VerifyReport verify(const leir::Program& a, const leir::Program& b, const VerifyOptions& opts = {});
// Caller-given inputs (e.g. the stored corpus inputs): one trial per input set.
VerifyReport verify(const leir::Program& a, const leir::Program& b, const std::vector<leir::TensorMap>& input_sets,
                    const VerifyOptions& opts = {});

// Outputs computed elsewhere (e.g. compiled builds of A and B run on the same inputs, one pair
// of output maps per trial; `seeds` names each trial's input seed): the same element rule and
// classification as verify(). Only A's output declarations are compared. The maps are referred
// to, not copied: at bench shapes one output map is tens of megabytes.
using OutputPair = std::pair<const leir::TensorMap*, const leir::TensorMap*>;  // (A's, B's)
VerifyReport compare_outputs(const leir::Program& a, const std::vector<OutputPair>& outputs,
                             const std::vector<uint64_t>& seeds, const VerifyOptions& opts = {});

// Why the signatures differ, or empty when they are the same (names, roles, dtypes, shapes and
// constant values; declaration order and aliases do not matter).
std::string signature_difference(const leir::Program& a, const leir::Program& b);

// Exactly {"equivalent":bool,"class":"exact|reassoc|failed|inconclusive","trials":N,"evidential":E,
// "finite_share":x,"worst":{"tensor","index","a","b","abs_err","rel_err","trial","seed"}|null};
// non-finite numbers as "inf"/"-inf"/"nan".
// `error` is not part of it (the CLI prints it on stderr).
std::string to_json(const VerifyReport& r);
// The inverse of to_json (a stored verdict read back; `error` and `invalid_reference`, which
// to_json leaves out, stay empty). Throws base::Error (Invalid) on a malformed object.
VerifyReport report_from_json(const std::string& text);

}  // namespace steptp::verify
