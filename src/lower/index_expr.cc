#include "lower/index_expr.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "ir/leir/printer.h"

namespace steptp::backend {

using leir::BinaryOp;
using leir::ExprKind;

std::string emit_index(const leir::ExprPtr& e, const IndexSpelling& s, const FailFn& fail) {
  auto sub = [&](int i) { return emit_index(e->args[i], s, fail); };
  switch (e->kind) {
    case ExprKind::Number:
      if (e->value != std::floor(e->value) || std::isinf(e->value))
        fail(e->loc, RejectionCode::NonIntegerSubscriptLiteral,
             fmt::format("subscript literal '{}' is not an integer", leir::print_expr(e)));
      return s.number(static_cast<int64_t>(e->value));
    case ExprKind::IndexVar: return s.var(*e);
    case ExprKind::Access: return s.gather(e);
    case ExprKind::Unary: return s.parenthesize_neg ? "(-" + sub(0) + ")" : "-" + sub(0);
    case ExprKind::Binary: {
      std::string a = sub(0), b = sub(1);
      switch (e->bop) {
        case BinaryOp::Add: return "(" + a + " + " + b + ")";
        case BinaryOp::Sub: return "(" + a + " - " + b + ")";
        case BinaryOp::Mul: return "(" + a + " * " + b + ")";
        case BinaryOp::FloorDiv: return s.floordiv + "(" + a + ", " + b + ")";
        case BinaryOp::Mod: return s.mod + "(" + a + ", " + b + ")";
        default: break;
      }
      break;
    }
    default: break;
  }
  fail(e->loc, RejectionCode::NonIntegerSubscript,
       fmt::format("'{}' is not an integer subscript expression (+ - * // % only)", leir::print_expr(e)));
  throw std::logic_error("emit_index: fail() returned");
}

}  // namespace steptp::backend
