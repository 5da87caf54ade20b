// Dependences between items (tensor-level RAW/WAR/WAW) and across loop iterations (affine
// subscripts, exact interval test).
//
// Loop-level test: two accesses of one tensor, executed in two loop-iteration instances, touch
// the same element only if every subscript pair is equal. For a loop ℓ shared by both accesses
// with the same nonzero coefficient k in some affine subscript pair, equality forces
// k·(ℓ1-ℓ2) = rest2 - rest1; when the interval of the right side contains no nonzero multiple
// of k reachable within the loop's extent, ℓ1 = ℓ2 is proven. Proven equalities cancel terms and
// the test is iterated to a fixpoint (proves tx in X[tx*4+a], then a). Anything unproven counts
// as a possible dependence: the analysis is conservative, never optimistic.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"

namespace steptp::analysis {

enum class DepKind { RAW, WAR, WAW };
std::string_view to_string(DepKind k);

struct ItemConflict {
  std::string tensor;
  DepKind kind;
};
// Conflicts of `second` running after `first` (tensor-level; conservative).
std::vector<ItemConflict> item_conflicts(const leir::Item& first, const leir::Item& second);

// One access occurrence of a statement: the access node and the loops around its statement.
struct AccessAt {
  leir::ExprPtr access;
  const std::vector<const leir::Loop*>* loops;  // enclosing loops, outermost first
};

// The loops among `candidates` (each must enclose both accesses) that are proven to take equal
// values whenever the two accesses touch the same element, given that the loops in
// `assumed_equal` do.
std::set<const leir::Loop*> proven_equal(const AccessAt& a, const AccessAt& b,
                                         const std::vector<const leir::Loop*>& candidates,
                                         const std::set<const leir::Loop*>& assumed_equal);

// A dependence pair inside a nest: two accesses of one tensor, at least one a write.
struct DepPair {
  int stmt_a = 0, stmt_b = 0;  // indices into the StmtRef list
  leir::ExprPtr access_a, access_b;
  std::string tensor;
  bool accumulation_self = false;  // both are the lhs/self term of one accumulation statement
  std::optional<AccumOp> op;       // when accumulation_self
  std::vector<const leir::Loop*> carried;  // band loops not proven equal, in band order
};

// Every dependence pair among the statements of nest `n`, with the loops of `n.nest->loops`
// that may carry it (outer loops of the nest are assumed equal).
std::vector<DepPair> nest_dependences(const NestRef& n);

enum class LoopDep { Independent, ReductionOnly, Carried };
struct LoopCheck {
  LoopDep kind = LoopDep::Independent;
  std::string reason;  // for ReductionOnly/Carried: tensor and statement involved
};
// Whether the iterations of loop `loop_index` of nest `n` are independent (LEIR.md §3).
// ReductionOnly: the only cross-iteration conflicts are accumulations of one statement into its
// own element (a parallel reduction).
LoopCheck check_loop(const NestRef& n, int loop_index);

// Whether permuting the loops of nest `n` (perm[k] = old index of the loop placed at k) keeps
// every dependence; sets *reassoc when the permutation changes the order in which a +/*
// accumulation combines its terms. `deps` from nest_dependences(n).
bool permutation_legal(const NestRef& n, const std::vector<DepPair>& deps, const std::vector<int>& perm,
                       bool* reassoc, std::string* reason);

}  // namespace steptp::analysis
