// Affine forms of subscripts: Σ coef·var + constant over loop variables, built from loop
// variables, integer literals, + - unary - and * by a constant (gathers, //, %, products of
// variables and non-integer literals are not affine). One builder for the three readers that
// each key a variable their own way: the validator by the loop that binds it (ir/leir/validate.cc),
// the interpreter's compiler by its register (ir/interp/affine.h), the analyses by its name
// (ir/analysis/affine.h).
//
// Arithmetic is checked against int64 overflow (ir/leir/int_math.h): a form that would overflow
// is not affine.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/int_math.h"

namespace steptp::leir {

template <class Var>
struct AffineForm {
  std::vector<std::pair<Var, int64_t>> terms;  // distinct variables, in order of first appearance, none zero
  int64_t constant = 0;
};

// What each reader accepts: integer literals up to `max_literal` in magnitude, and (when set)
// coefficients and constants up to `max_product` after a product by a constant (the interpreter
// keeps them far from overflow in its offset arithmetic).
struct AffineLimits {
  int64_t max_literal = 0;
  std::optional<int64_t> max_product;
};

namespace affine_detail {

template <class Var>
bool add_scaled(AffineForm<Var>& into, const AffineForm<Var>& x, int64_t k) {
  int64_t c;
  if (!mul_ok(x.constant, k, &c) || !add_ok(into.constant, c, &into.constant)) return false;
  for (const auto& [v, coef] : x.terms) {
    if (!mul_ok(coef, k, &c)) return false;
    auto it = std::find_if(into.terms.begin(), into.terms.end(), [&](const auto& t) { return t.first == v; });
    if (it == into.terms.end()) into.terms.emplace_back(v, c);
    else if (!add_ok(it->second, c, &it->second)) return false;
  }
  std::erase_if(into.terms, [](const auto& t) { return t.second == 0; });
  return true;
}

}  // namespace affine_detail

// The affine form of `e`; `resolve(name)` gives the key of a loop variable (nullopt: unbound,
// so not affine).
template <class Var, class Resolve>
std::optional<AffineForm<Var>> affine_form(const Expr& e, const Resolve& resolve, const AffineLimits& lim) {
  using Form = AffineForm<Var>;
  switch (e.kind) {
    case ExprKind::Number: {
      if (!(std::abs(e.value) <= double(lim.max_literal))) return std::nullopt;
      const auto v = static_cast<int64_t>(e.value);
      if (static_cast<double>(v) != e.value) return std::nullopt;
      Form f;
      f.constant = v;
      return f;
    }
    case ExprKind::IndexVar: {
      std::optional<Var> v = resolve(e.var_name());
      if (!v) return std::nullopt;
      Form f;
      f.terms.emplace_back(std::move(*v), 1);
      return f;
    }
    case ExprKind::Unary: {
      auto x = affine_form<Var>(*e.args[0], resolve, lim);
      Form f;
      if (!x || !affine_detail::add_scaled(f, *x, -1)) return std::nullopt;
      return f;
    }
    case ExprKind::Binary: {
      if (e.bop != BinaryOp::Add && e.bop != BinaryOp::Sub && e.bop != BinaryOp::Mul) return std::nullopt;
      auto a = affine_form<Var>(*e.args[0], resolve, lim);
      if (!a) return std::nullopt;
      auto b = affine_form<Var>(*e.args[1], resolve, lim);
      if (!b) return std::nullopt;
      Form f;
      if (e.bop == BinaryOp::Mul) {
        if (!a->terms.empty() && !b->terms.empty()) return std::nullopt;
        const bool a_constant = a->terms.empty();
        if (!affine_detail::add_scaled(f, a_constant ? *b : *a, a_constant ? a->constant : b->constant))
          return std::nullopt;
        auto within = [&](int64_t c) { return !lim.max_product || (c >= -*lim.max_product && c <= *lim.max_product); };
        if (!within(f.constant)) return std::nullopt;
        for (const auto& t : f.terms)
          if (!within(t.second)) return std::nullopt;
        return f;
      }
      if (!affine_detail::add_scaled(f, *a, 1) || !affine_detail::add_scaled(f, *b, e.bop == BinaryOp::Add ? 1 : -1))
        return std::nullopt;
      return f;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace steptp::leir
