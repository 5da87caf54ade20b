#include "lower/c_expr.h"

#include <fmt/format.h>

#include <cmath>
#include <initializer_list>

#include "lower/index_expr.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"

namespace steptp::backend {

using leir::BinaryOp;
using leir::ExprKind;
using leir::ExprPtr;

bool speculation_safe(const leir::Expr& e, const leir::TensorTable& table) {
  std::vector<const leir::Expr*> witnesses;
  leir::for_each_expr(e.args[0], [&](const leir::Expr& n) {
    if (n.is_access()) witnesses.push_back(&n);
  });
  auto witnessed = [&](const leir::Expr& a) {
    const auto& shape = table.at(a.tensor).shape;
    for (const leir::Expr* w : witnesses) {
      const auto& wshape = table.at(w->tensor).shape;
      if (w->args.size() != a.args.size()) continue;
      bool same = true;
      for (size_t d = 0; same && d < a.args.size(); ++d)
        same = shape[d] >= wshape[d] && leir::equal(a.args[d], w->args[d]);
      if (same) return true;
    }
    return false;
  };
  bool safe = true;
  for (size_t i = 1; i < 3; ++i)
    leir::for_each_expr(e.args[i], [&](const leir::Expr& n) {
      if (n.is_access()) safe = safe && witnessed(n);
    });
  return safe;
}

std::string CExprEmitter::index(const ExprPtr& e) const {
  IndexSpelling s{[](int64_t v) { return fmt::format("{}LL", v); },
                  [](const leir::Expr& v) { return "v_" + v.var_name(); },
                  [this](const ExprPtr& a) { return fmt::format("static_cast<int64_t>(t_{}[{}])", a->tensor, flat(a)); },
                  "steptp_fdiv_i", "steptp_mod_i", true};
  return emit_index(e, s, [this](leir::SourceLoc loc, RejectionCode c, const std::string& m) { fail(loc, c, m); });
}

std::string CExprEmitter::flat(const ExprPtr& access) const {
  const auto& info = table_.at(access->tensor);
  if (access->args.size() != info.shape.size())
    fail(access->loc, RejectionCode::RankMismatch,
         fmt::format("{} has rank {}, accessed with {} subscripts", access->tensor, info.shape.size(),
                     access->args.size()));
  if (info.shape.empty()) return "0";
  int64_t stride = 1;
  std::vector<std::string> parts(info.shape.size());
  for (size_t d = info.shape.size(); d-- > 0;) {
    std::string ix = index(access->args[d]);
    parts[d] = stride == 1 ? ix : fmt::format("{} * {}LL", ix, stride);
    stride *= info.shape[d];
  }
  std::string s;
  for (size_t d = 0; d < parts.size(); ++d) s += (d ? " + " : "") + parts[d];
  return s;
}

namespace {
// The floating compute type of the tensors `exprs` access: double when any is f64 or none is
// floating, float otherwise.
std::string floating_compute_type(std::initializer_list<leir::ExprPtr> exprs, const leir::TensorTable& table) {
  bool any_f64 = false, any_float = false;
  for (const auto& e : exprs)
    leir::for_each_expr(e, [&](const leir::Expr& n) {
      if (!n.is_access()) return;
      leir::DType d = table.at(n.tensor).dtype;
      any_f64 |= d == leir::DType::F64;
      any_float |= leir::is_floating(d);
    });
  return (any_f64 || !any_float) ? "double" : "float";
}

// Whether `e` is an integer value built as integer_valued (c_expr.h) allows.
bool integer_value_expr(const ExprPtr& e, const leir::TensorTable& table) {
  switch (e->kind) {
    case ExprKind::Number:
      return std::isfinite(e->value) && e->value == std::trunc(e->value) && std::abs(e->value) < 0x1p53;
    case ExprKind::IndexVar: return true;
    case ExprKind::Access: return !leir::is_floating(table.at(e->tensor).dtype);
    case ExprKind::Call:
      if (e->func == leir::Func::IfThenElse)
        return integer_value_expr(e->args[1], table) && integer_value_expr(e->args[2], table);
      if (e->func != leir::Func::Min && e->func != leir::Func::Max) return false;
      for (const auto& a : e->args)
        if (!integer_value_expr(a, table)) return false;
      return true;
    default: return false;
  }
}
}  // namespace

std::string CExprEmitter::cond(const ExprPtr& e) const {
  if (ct_ == "int64_t") {  // an integer-valued statement: its conditions compare in their own type
    const std::string saved = ct_;
    ct_ = floating_compute_type({e}, table_);
    std::string c = cond(e);
    ct_ = saved;
    return c;
  }
  if (e->kind == ExprKind::Compare) {
    std::string s;
    for (size_t i = 0; i < e->cmp_ops.size(); ++i)
      s += (i ? " && " : "") + std::string("(") + value(e->args[i]) + " " + std::string(leir::to_string(e->cmp_ops[i])) +
           " " + value(e->args[i + 1]) + ")";
    return "(" + s + ")";
  }
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::And || e->bop == BinaryOp::Or))
    return "(" + cond(e->args[0]) + (e->bop == BinaryOp::And ? " && " : " || ") + cond(e->args[1]) + ")";
  if (e->is_access())
    if (auto c = access_condition(e)) return *c;
  return "(" + value(e) + " != " + lit(0) + ")";
}

std::string CExprEmitter::value(const ExprPtr& e) const {
  switch (e->kind) {
    case ExprKind::Number: return lit(e->value);
    case ExprKind::IndexVar: return fmt::format("static_cast<{}>(v_{})", ct_, e->var_name());
    case ExprKind::Access:
      if (auto v = access_value(e)) return *v;
      return fmt::format("static_cast<{}>(t_{}[{}])", ct_, e->tensor, flat(e));
    case ExprKind::Unary: return "(-" + value(e->args[0]) + ")";
    case ExprKind::Compare: return "(" + cond(e) + " ? " + lit(1) + " : " + lit(0) + ")";
    case ExprKind::Binary: {
      if (e->bop == BinaryOp::And || e->bop == BinaryOp::Or) return "(" + cond(e) + " ? " + lit(1) + " : " + lit(0) + ")";
      std::string a = value(e->args[0]), b = value(e->args[1]);
      switch (e->bop) {
        case BinaryOp::Add: return "(" + a + " + " + b + ")";
        case BinaryOp::Sub: return "(" + a + " - " + b + ")";
        case BinaryOp::Mul: return "(" + a + " * " + b + ")";
        case BinaryOp::Div: return "(" + a + " / " + b + ")";
        case BinaryOp::FloorDiv: return "steptp_floordiv(" + a + ", " + b + ")";
        case BinaryOp::Mod: return "steptp_mod(" + a + ", " + b + ")";
        case BinaryOp::Pow: return sp_.pow + "(" + a + ", " + b + ")";
        default: break;
      }
      break;
    }
    case ExprKind::Call: {
      if (e->func == leir::Func::IfThenElse) {  // lazy: only the taken branch runs (prefix scans need it)
        if (!sp_.select.empty() && speculation_safe(*e, table_))
          return sp_.select + "(" + cond(e->args[0]) + ", " + value(e->args[1]) + ", " + value(e->args[2]) + ")";
        return "(" + cond(e->args[0]) + " ? " + value(e->args[1]) + " : " + value(e->args[2]) + ")";
      }
      auto f = sp_.calls.find(e->func);
      if (f == sp_.calls.end()) break;
      std::string args;
      for (size_t i = 0; i < e->args.size(); ++i) args += (i ? ", " : "") + value(e->args[i]);
      return f->second + "(" + args + ")";
    }
  }
  fail(e->loc, RejectionCode::UnloweredExpression, fmt::format("cannot lower expression '{}'", leir::print_expr(e)));
  // fail() is [[noreturn]], but GCC does not carry that through a virtual call.
  __builtin_unreachable();
}

std::string CExprEmitter::compute_type(const leir::Stmt& s, bool all_f64) const {
  return all_f64 ? "double" : floating_compute_type({s.lhs, s.rhs}, table_);
}

bool CExprEmitter::integer_valued(const leir::Stmt& s) const {
  return leir::is_integer(table_.at(s.lhs->tensor).dtype) && integer_value_expr(s.rhs, table_);
}

}  // namespace steptp::backend
