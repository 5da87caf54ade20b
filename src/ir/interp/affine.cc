#include "ir/interp/affine.h"

#include <algorithm>

namespace steptp::interp {

namespace {

void add_scaled(Linear& into, const Linear& x, int64_t k) {
  into.c0 += k * x.c0;
  for (const auto& t : x.terms) {
    auto it = std::find_if(into.terms.begin(), into.terms.end(), [&](const LinearTerm& u) { return u.var == t.var; });
    if (it == into.terms.end()) into.terms.push_back({t.var, k * t.coef});
    else it->coef += k * t.coef;
  }
  std::erase_if(into.terms, [](const LinearTerm& t) { return t.coef == 0; });
}

}  // namespace

std::optional<Linear> to_linear(const leir::Expr& e, const VarScope& scope) {
  using leir::BinaryOp;
  using leir::ExprKind;
  switch (e.kind) {
    case ExprKind::Number: {
      // Bounded so that products of coefficients stay far from int64 overflow.
      if (!(std::abs(e.value) < 1e9) || e.value != static_cast<double>(static_cast<int64_t>(e.value)))
        return std::nullopt;
      return Linear{static_cast<int64_t>(e.value), {}};
    }
    case ExprKind::IndexVar: {
      int v = scope.find(e.var_name());
      if (v < 0) return std::nullopt;
      return Linear{0, {{v, 1}}};
    }
    case ExprKind::Unary: {
      auto x = to_linear(*e.args[0], scope);
      if (!x) return std::nullopt;
      Linear out;
      add_scaled(out, *x, -1);
      return out;
    }
    case ExprKind::Binary: {
      if (e.bop != BinaryOp::Add && e.bop != BinaryOp::Sub && e.bop != BinaryOp::Mul) return std::nullopt;
      auto a = to_linear(*e.args[0], scope);
      auto b = to_linear(*e.args[1], scope);
      if (!a || !b) return std::nullopt;
      Linear out;
      if (e.bop == BinaryOp::Mul) {
        if (!a->terms.empty() && !b->terms.empty()) return std::nullopt;
        if (a->terms.empty()) add_scaled(out, *b, a->c0);
        else add_scaled(out, *a, b->c0);
        if (std::abs(out.c0) > (int64_t{1} << 40)) return std::nullopt;
        for (const auto& t : out.terms)
          if (std::abs(t.coef) > (int64_t{1} << 40)) return std::nullopt;
        return out;
      }
      add_scaled(out, *a, 1);
      add_scaled(out, *b, e.bop == BinaryOp::Add ? 1 : -1);
      return out;
    }
    default:
      return std::nullopt;
  }
}

Range range_of(const Linear& l, const std::vector<Range>& var_ranges) {
  Range r{l.c0, l.c0};
  for (const auto& t : l.terms) {
    const Range& v = var_ranges[t.var];
    int64_t a = t.coef * v.lo, b = t.coef * v.hi;
    r.lo += std::min(a, b);
    r.hi += std::max(a, b);
  }
  return r;
}

}  // namespace steptp::interp
