// Which inputs feed operations with a restricted domain (LEIR.md §5: "inputs are drawn inside the
// domains the program's operations need"). The in-domain input profiles draw these tensors
// positive and away from zero, so that `log`, `sqrt` and friends see valid arguments and the
// verifier's trials produce finite outputs, i.e. evidence.
#pragma once

#include <set>
#include <string>

#include "ir/leir/ast.h"

namespace steptp::interp {

// The float inputs and params of `p` whose values reach (directly or through intermediates) an
// argument of log, log1p, sqrt or rsqrt, the base of a power whose exponent is not a
// non-negative integer literal, or the divisor of /, // or %. Over-approximate by design: the
// dataflow is by tensor, not by element, and ignores whether the path preserves sign (a tensor
// that reaches log through exp() is marked too); drawing it positive costs nothing there.
std::set<std::string> domain_restricted_inputs(const leir::Program& p);

}  // namespace steptp::interp
