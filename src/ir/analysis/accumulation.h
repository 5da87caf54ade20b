// The accumulation rule of LEIR.md §3 as a reusable predicate.
//
// A statement `X_s = rhs` accumulates when rhs, read as a flattened chain of one operator at the
// top (`+`/`-` together, or `*`), has X_s as a term with positive sign, or is max/min(X_s, e) in
// either order. An unset X_s then reads as the identity of the operator.
#pragma once

#include <optional>

#include "ir/leir/ast.h"

namespace steptp::analysis {

enum class AccumOp { Add, Mul, Max, Min };

struct Accumulation {
  AccumOp op = AccumOp::Add;
  leir::ExprPtr self;  // the occurrence of X_s in rhs that makes it an accumulation
  // Number of occurrences of X_s in rhs other than `self` (e.g. X=X+X*e has one). Rewrites that
  // retarget the accumulation (reduction factorization, write caching) require 0.
  int other_self_reads = 0;
};

std::optional<Accumulation> accumulation_of(const leir::Stmt& s);
bool is_accumulation(const leir::Stmt& s);

// True when the operator's combination order can change the floating-point result (+, *);
// max/min are exact in any order.
bool reorder_changes_rounding(AccumOp op);

// A copy of `rhs` in which the single occurrence `self` (pointer identity) is replaced by `by`.
leir::ExprPtr replace_occurrence(const leir::ExprPtr& rhs, const leir::ExprPtr& self, const leir::ExprPtr& by);

}  // namespace steptp::analysis
