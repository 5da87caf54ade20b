// Shared machinery of the algebraic strategies (STRATEGIES.md 23-34, 37-39).
//
// Sites. A site is one statement and one TARGET inside the part of its right side that an
// algebraic rewrite may change:
//  * for an accumulation `X = X + e` / `X = X * e` / `max(X, e)` (LEIR.md §3) that part is `e`:
//    X stays a positive top-level term of the same operator, so the statement stays an
//    accumulation of the same kind; a plain statement never becomes one;
//  * rewriting stops at discontinuous operators (comparisons, & |, // %, floor, ceil, the
//    condition of if_then_else): a rounding change there could flip a branch or an integer;
//  * statements that store into integer or bool tensors are refused (the store truncates, so
//    any rounding change can change the stored value).
// A strategy chooses its targets: REGIONS (maximal sub-trees GiNaC sees, ir/analysis/algebra.h: the
// rewritable part itself and each argument of a continuous opaque call such as max/min/erf and
// each branch of if_then_else) or NODES (single sub-expressions such as one exp(...) call).
//
// Guards, applied to every result before it is offered (each refusal says which one failed):
//  * the result must change the canonical form (analysis::canonical_key): `1e-05` -> `1.0e-5` or
//    `a*b` -> `b*a` is not a transformation;
//  * denominators: a divisor that can be zero may neither appear (no new division by zero, the
//    public engine's `x/y*y` bug) nor disappear (no removed singularity: the result must be
//    undefined where the input is); divisors proven nonzero (nonzero constants, c+u with c > 0
//    and u >= 0, ...) are free;
//  * numeric probes: the target and its replacement are evaluated by the reference interpreter
//    (interp/, its float64 semantics: Python // and %, lazy if_then_else) on 64 seeded value
//    assignments of their opaque leaves (ordinary, x1e3, x1e-3, small integers with zeros and
//    ties, positive, x30, +-[600,1000], [700,1000]); a disagreement (NaN/inf on one side only,
//    e.g. exp(x)*exp(-y) overflowing where exp(x-y) does not, or a value difference beyond
//    rounding) refuses;
//  * size: the result may not blow up (at most 4x the target + 16 nodes).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "transform/algebraic_probes.h"  // probe_disagreement, constant_value_of
#include "transform/algebraic_signs.h"   // nonnegative, nonzero, nonnegative_tensors
#include "transform/strategy.h"

namespace steptp::strategies::algebraic {

// The rewritable part of one statement.
struct StmtView {
  std::vector<int> path;    // into the program body, as Site::path
  const leir::Stmt* stmt = nullptr;
  leir::ExprPtr body;       // the right side without the accumulator term (whole RHS otherwise)
  bool accumulation = false;
  // Rebuilds the statement's right side around a body rewritten at `target` (a path into
  // `body`). A rewrite inside one term of an accumulation keeps that term one operand (R+(x+x-x),
  // not R+x+x-x, whose rounding differs); a rewrite of the term chain itself is re-chained.
  std::function<leir::ExprPtr(const leir::ExprPtr& body, const std::vector<int>& target)> reassemble;
};

// A sub-expression of StmtView::body, addressed by child indices from body.
struct Target {
  std::vector<int> path;
  leir::ExprPtr expr;
};

struct Context {
  const ScheduleState& state;     // the program and its cached analyses
  const StmtView& view;
  const std::set<std::string>& nonneg_tensors;  // tensors whose every value is >= 0 (or NaN)
};

// The result of one rewrite attempt: a replacement for the target, or why there is none.
struct Rewrite {
  leir::ExprPtr result;
  std::string refusal;
  static Rewrite to(leir::ExprPtr e) { return {std::move(e), {}}; }
  static Rewrite refuse(std::string why) { return {nullptr, std::move(why)}; }
};

// The family's half of the strategy interface: a strategy names its targets in a statement, the
// parameter choices at a target, and the rewrite; sites, refusals, parameter spaces and applies
// follow from trying every choice once per state (cached, shared by survey, param_space, apply).
class AlgebraicStrategy : public Strategy {
 public:
  Exactness exactness() const override { return Exactness::Algebraic; }
  Survey survey(const ScheduleState& st) const override;
  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override;
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override;

 protected:
  virtual std::vector<Target> targets(const StmtView& v) const = 0;
  virtual std::vector<Params> target_params(const Target& t, const Context& c) const { return {Params{}}; }
  virtual Rewrite rewrite(const Target& t, const Params& params, const Context& c) const = 0;
  // The log strategies move a divisor into a logarithm (log(a/b) -> log(a)-log(b)), which is
  // undefined at b = 0 just the same; they rely on the probes instead.
  virtual bool checks_denominators() const { return true; }

 private:
  struct Attempt {
    std::optional<leir::Stmt> stmt;  // the rewritten statement, or
    std::string refusal;             // why there is none
  };
  Attempt attempt(const ScheduleState& st, const StmtView& v, const Target& t, const Params& params,
                  const std::set<std::string>& nonneg) const;
  struct Attempts;
  const Attempts& attempts(const ScheduleState& st) const;
};

// Statements of a program in program order with their rewritable parts (eligible ones only);
// `refused` (if given) receives the ineligible ones with the reason.
std::vector<StmtView> statement_views(const leir::Program& p, std::vector<Refusal>* refused = nullptr);

// Target finders.
std::vector<Target> region_targets(const StmtView& v);
std::vector<Target> node_targets(const StmtView& v, const std::function<bool(const leir::Expr&)>& pick);

// Divisors of an expression (right operands of `/`, bases of negative powers, rsqrt arguments),
// split into product factors and keyed sign-insensitively; nonzero ones are left out.
std::set<std::string> risky_denominators(const leir::ExprPtr& e, const std::set<std::string>& nonneg_tensors);

// Replaces the sub-expression at `path` (child indices) of `root`.
leir::ExprPtr replace_at(const leir::ExprPtr& root, const std::vector<int>& path, const leir::ExprPtr& by);

// Shorthand for building results.
leir::ExprPtr num(double v);
std::string brief(const leir::ExprPtr& e, size_t max_chars = 80);

}  // namespace steptp::strategies::algebraic
