// Sign facts of the algebraic strategies (algebraic_base.h): which expressions are >= 0, which
// can never be 0, and which tensors hold only values >= 0. The denominator guard
// (risky_denominators) and the strategies' domain conditions rest on them.
#pragma once

#include <set>
#include <string>

#include "ir/leir/ast.h"

namespace steptp::strategies::algebraic {

// Sign facts. nonnegative: >= 0 or NaN for every input (exp, sqrt, abs, even powers, sums and
// products of such, tensors in `nonneg_tensors`). nonzero: can never be 0 (nonzero constants,
// c+u with c > 0 and u >= 0, products/quotients/sqrt of such). exp(x) is NOT nonzero in
// float64: it underflows to 0 for x < -745.
bool nonnegative(const leir::ExprPtr& e, const std::set<std::string>& nonneg_tensors);
bool nonzero(const leir::ExprPtr& e, const std::set<std::string>& nonneg_tensors);
// Tensors whose values are provably >= 0 (greatest fixpoint over the program's writes).
std::set<std::string> nonnegative_tensors(const leir::Program& p);

}  // namespace steptp::strategies::algebraic
