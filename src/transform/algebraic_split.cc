// The split strategies (STRATEGIES.md 37-39): identities that insert a chosen z.
//
// z comes from a small deterministic set of constants, never from the data:
//  * multiplicative_split x -> x/z*z needs z != 0 on every input; the public engine used a
//    neighbouring element (if_then_else(a-1<0,1,E_{a-1})) that is zero on some inputs and
//    divided by it. z in {2, 4}: powers of two make x/z*z bit-exact except for subnormal x. (A
//    rounding z such as 3 is not harmless: one rounding inside exp(x-max) with x ~ 1e9, as in
//    attention at x1e3 inputs, changes the output by 1e-4 relative.)
//  * additive_split x -> x+z-z with z = x: x+x = 2x and 2x-x = x are exact in float64, so the
//    result is bit-identical for finite x. A constant z rounds small x away (4.4e-8+2-2 is off by
//    2.6e-9 relative, beyond the verifier's 1e-9), a data-dependent z (another access) can be
//    +-inf (masks) or huge. Targets that may be infinite (a program with inf literals, values
//    derived from exp) are refused: inf+inf-inf is NaN.
//  * exponential_split exp(u) -> exp(u-z)*exp(z) ("mul") or exp(u-z)/exp(-z) ("div"), z in
//    {1, 0.5, 2}. The textbook form exp(x-y) -> exp(x-z)*exp(z-y) with a z between unrelated x
//    and y overflows: softmax's exp(x-max) with x, max ~ 1e3 is finite, exp(x-z) is inf and
//    exp(z-max) is 0, giving NaN. With a small constant z the two factors overflow/underflow
//    exactly where exp(u) does (up to one rounding at the boundary), so the split is safe for
//    every u. The numeric probes of the base class check it again.
// Products of exponentials over the whole float range (exp(x)*exp(y) with x, y ~ +-1e3, as in
// the exp_exp workload) are refused as targets: there 5e-324*inf = inf but 0*inf = NaN, and any
// inserted z moves the underflow boundary (exp(-745.1)/2*2 = 0, exp(-40)+1-1 = 0,
// exp(-745.1-1)*exp(1) = 0).
// Targets (NODES): multiplicative/additive split rewrite one floating-point tensor read or one
// exp/log/sqrt/erf/tanh/sigmoid call; exponential_split one exp call. The accumulator of an
// accumulation is never a target (algebraic_base.h).
#include <algorithm>
#include <cmath>
#include <set>

#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "transform/algebraic_base.h"
#include "transform/schedule_state.h"

namespace steptp::strategies::algebraic {
namespace {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;

ExprPtr constant(const std::string& text) { return leir::make_number(std::stod(text), text); }

const std::string* z_param(const Params& p) {
  auto it = p.find("z");
  return it == p.end() ? nullptr : std::get_if<std::string>(&it->second);
}

// A value that may be an exponential anywhere in the float range: exp(...) or derived from one.
bool wide(const ExprPtr& e, const std::set<std::string>& wide_tensors) {
  switch (e->kind) {
    case ExprKind::Access: return wide_tensors.count(e->tensor) > 0;
    case ExprKind::Call: return e->func == Func::Exp;
    case ExprKind::Unary: return wide(e->args[0], wide_tensors);
    case ExprKind::Binary:
      switch (e->bop) {
        case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Div:
          return wide(e->args[0], wide_tensors) || wide(e->args[1], wide_tensors);
        case BinaryOp::Pow: return wide(e->args[0], wide_tensors);
        default: return false;
      }
    default: return false;
  }
}

bool has_wide_product(const ExprPtr& e, const std::set<std::string>& w) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul && wide(e->args[0], w) && wide(e->args[1], w))
    return true;
  for (const auto& a : e->args)
    if (has_wide_product(a, w)) return true;
  return false;
}

// The tensors of a program whose values may be full-range exponentials (`wide`) or +-inf
// (`infinite`): least fixpoints over the program's writes, computed once per state.
struct ValueRanges {
  std::set<std::string> wide, infinite;
  bool wide_product = false;  // some statement multiplies two wide values
};

bool reaches_infinity(const ExprPtr& e, const std::set<std::string>& infinite);

const ValueRanges& value_ranges(const ScheduleState& st) {
  static const char owner = 0;
  return st.memo<ValueRanges>(&owner, [&] {
    ValueRanges r;
    std::vector<const leir::Stmt*> stmts;
    leir::for_each_stmt(st.program().body,
                        [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) { stmts.push_back(&s); });
    auto fixpoint = [&](std::set<std::string>& into, auto reaches) {
      for (bool changed = true; changed;) {
        changed = false;
        for (const auto* s : stmts)
          if (!into.count(s->lhs->tensor) && reaches(s->rhs, into)) {
            into.insert(s->lhs->tensor);
            changed = true;
          }
      }
    };
    fixpoint(r.wide, wide);
    fixpoint(r.infinite, reaches_infinity);
    r.wide_product =
        std::any_of(stmts.begin(), stmts.end(), [&](const leir::Stmt* s) { return has_wide_product(s->rhs, r.wide); });
    return r;
  });
}

// Whether `target` is a full-range exponential of a program that multiplies two of them.
bool in_wide_product_program(const ScheduleState& st, const ExprPtr& target) {
  const auto& r = value_ranges(st);
  return r.wide_product && wide(target, r.wide);
}

// Whether `e` may evaluate to +-inf: it holds an inf literal or an exp, or reads a tensor that
// may hold one (max/min/if_then_else pass it on too).
bool reaches_infinity(const ExprPtr& e, const std::set<std::string>& infinite) {
  if (e->is_number() && std::isinf(e->value)) return true;
  if (e->kind == ExprKind::Call && e->func == Func::Exp) return true;
  if (e->kind == ExprKind::Access && infinite.count(e->tensor)) return true;
  return std::any_of(e->args.begin(), e->args.end(), [&](const ExprPtr& a) { return reaches_infinity(a, infinite); });
}

bool may_be_infinite(const ScheduleState& st, const ExprPtr& target) {
  return reaches_infinity(target, value_ranges(st).infinite);
}

constexpr const char* kWideRefusal =
    "an exponential over the whole float range in a program that multiplies such values (0*inf = NaN "
    "where the input has tiny*inf = inf): inserting z moves the underflow boundary";

bool split_target(const Expr& e) {
  if (e.kind == ExprKind::Access) return leir::is_floating(e.dtype);
  if (e.kind != ExprKind::Call) return false;
  switch (e.func) {
    case Func::Exp: case Func::Log: case Func::Sqrt: case Func::Erf: case Func::Tanh: case Func::Sigmoid:
      return true;
    default:
      return false;
  }
}

class MultiplicativeSplit final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "multiplicative_split"; }
  std::string_view description() const override { return "x -> x/z*z for a constant nonzero z"; }

 protected:
  std::vector<Target> targets(const StmtView& v) const override { return node_targets(v, split_target); }
  std::vector<Params> target_params(const Target&, const Context&) const override {
    return {Params{{"z", std::string("2")}}, Params{{"z", std::string("4")}}};
  }
  Rewrite rewrite(const Target& t, const Params& params, const Context& c) const override {
    const std::string* z = z_param(params);
    if (!z || std::stod(*z) == 0) return Rewrite::refuse("z must be a nonzero constant");
    if (in_wide_product_program(c.state, t.expr)) return Rewrite::refuse(kWideRefusal);
    ExprPtr zc = constant(*z);
    return Rewrite::to(leir::make_binary(BinaryOp::Mul, leir::make_binary(BinaryOp::Div, t.expr, zc), zc));
  }
};

class AdditiveSplit final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "additive_split"; }
  std::string_view description() const override { return "x -> x+z-z with z = x (bit-exact for finite x)"; }

 protected:
  std::vector<Target> targets(const StmtView& v) const override { return node_targets(v, split_target); }
  std::vector<Params> target_params(const Target&, const Context&) const override {
    return {Params{{"z", std::string("x")}}};
  }
  Rewrite rewrite(const Target& t, const Params& params, const Context& c) const override {
    const std::string* z = z_param(params);
    if (!z || *z != "x") return Rewrite::refuse("z must be x (the target itself)");
    if (in_wide_product_program(c.state, t.expr)) return Rewrite::refuse(kWideRefusal);
    if (may_be_infinite(c.state, t.expr))
      return Rewrite::refuse("the value may be infinite (an inf literal or an exponential feeds it): inf+inf-inf is NaN");
    return Rewrite::to(leir::make_binary(BinaryOp::Sub, leir::make_binary(BinaryOp::Add, t.expr, t.expr), t.expr));
  }
};

class ExponentialSplit final : public AlgebraicStrategy {
 public:
  std::string_view name() const override { return "exponential_split"; }
  std::string_view description() const override {
    return "exp(u) -> exp(u-z)*exp(z) or exp(u-z)/exp(-z) for a small constant z";
  }

 protected:
  std::vector<Target> targets(const StmtView& v) const override {
    return node_targets(v, [](const Expr& e) { return e.kind == ExprKind::Call && e.func == Func::Exp; });
  }
  std::vector<Params> target_params(const Target&, const Context&) const override {
    std::vector<Params> out;
    for (const char* form : {"mul", "div"})
      for (const char* z : {"1", "0.5", "2"}) out.push_back(Params{{"form", std::string(form)}, {"z", std::string(z)}});
    return out;
  }
  Rewrite rewrite(const Target& t, const Params& params, const Context& c) const override {
    if (in_wide_product_program(c.state, t.expr)) return Rewrite::refuse(kWideRefusal);
    const std::string* z = z_param(params);
    auto it = params.find("form");
    const std::string* form = it == params.end() ? nullptr : std::get_if<std::string>(&it->second);
    if (!z || !form || (*form != "mul" && *form != "div")) return Rewrite::refuse("parameters z and form (mul|div) required");
    ExprPtr zc = constant(*z);
    ExprPtr shifted = leir::make_call(Func::Exp, {leir::make_binary(BinaryOp::Sub, t.expr->args[0], zc)});
    if (*form == "mul")
      return Rewrite::to(leir::make_binary(BinaryOp::Mul, shifted, leir::make_call(Func::Exp, {zc})));
    return Rewrite::to(leir::make_binary(BinaryOp::Div, shifted, leir::make_call(Func::Exp, {leir::make_neg(zc)})));
  }
};

RegisterStrategy<ExponentialSplit> exponential_split_registrar(37);
RegisterStrategy<MultiplicativeSplit> multiplicative_split_registrar(38);
RegisterStrategy<AdditiveSplit> additive_split_registrar(39);

}  // namespace
}  // namespace steptp::strategies::algebraic
