// Checking a strategy result against its input with `steptp verify` semantics (LEIR.md §5,
// src/ir/verify/verifier.h): seeded trials, per-dtype tolerances, `exact` = bit-identical outputs
// on every trial. A compact pass/fail + message for tests and the sweep.
#pragma once

#include <string>

#include "ir/leir/ast.h"

namespace steptp::strategies {

struct Equivalence {
  bool ok = false;            // verified: exact or reassoc (never inconclusive)
  bool exact = false;
  bool inconclusive = false;  // nothing differed, but no trial gave evidence (ir/verify/verifier.h)
  std::string message;  // why not, naming the output, element and trial
};

struct EquivalenceOptions {
  int trials = 3;
  uint64_t seed = 0;
};

Equivalence check_equivalent(const leir::Program& a, const leir::Program& b, const EquivalenceOptions& o = {});

}  // namespace steptp::strategies
