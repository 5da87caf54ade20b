// The numeric probes of the algebraic strategies (the float64 guard in algebraic_base.h's header
// comment): expressions evaluated by the reference interpreter on seeded value assignments of
// their opaque leaves.
#pragma once

#include <set>
#include <string>

#include "ir/leir/ast.h"

namespace steptp::strategies::algebraic {

// Float64 probe comparison of `before` and `after` (see algebraic_base.h's header comment), run
// by the interpreter as one program over all probes; an empty string when they agree on every
// probe, otherwise a description of the first disagreement. Reads of tensors in `nonneg_tensors`
// get probe values >= 0.
std::string probe_disagreement(const leir::ExprPtr& before, const leir::ExprPtr& after,
                               const std::set<std::string>& nonneg_tensors = {});

// The value of an expression without leaves, as the interpreter computes it.
double constant_value_of(const leir::ExprPtr& e);

}  // namespace steptp::strategies::algebraic
