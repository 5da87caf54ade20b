// Checking a strategy result against its input (LEIR.md §5): both programs run in the reference
// interpreter on several seeded input sets (ordinary, mixed signs/zeros, scaled up); outputs are
// compared element-wise, |x-y| <= atol + rtol*|y|, NaN equal to NaN, infinities only to the same
// infinity. `exact` reports bit-identical outputs on every trial.
//
// This is the strategies' own gate (used by tests and the sweep); src/verify's verifier is the
// project-wide tool with the full report.
#pragma once

#include <string>

#include "leir/ast.h"

namespace steptp::strategies {

struct Equivalence {
  bool ok = false;
  bool exact = false;
  std::string message;  // why not, naming the output, element and trial
};

struct EquivalenceOptions {
  int trials = 3;
  double atol = 1e-9, rtol = 1e-7;
  uint64_t seed = 1000;
};

Equivalence check_equivalent(const leir::Program& a, const leir::Program& b, const EquivalenceOptions& o = {});

}  // namespace steptp::strategies
