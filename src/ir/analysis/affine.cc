#include "ir/analysis/affine.h"

#include <algorithm>

#include "ir/leir/affine.h"

namespace steptp::analysis {

using leir::BinaryOp;
using leir::ExprPtr;

int64_t Affine::coeff_of(const std::string& var) const {
  auto it = coeff.find(var);
  return it == coeff.end() ? 0 : it->second;
}

void Affine::add_term(const std::string& var, int64_t c) {
  if (c == 0) return;
  auto [it, inserted] = coeff.emplace(var, c);
  if (inserted) {
    if (std::find(order.begin(), order.end(), var) == order.end()) order.push_back(var);
    return;
  }
  it->second += c;
  if (it->second == 0) {
    coeff.erase(it);
    order.erase(std::find(order.begin(), order.end(), var));
  }
}

Affine& Affine::operator+=(const Affine& o) {
  for (const auto& v : o.order) add_term(v, o.coeff.at(v));
  constant += o.constant;
  return *this;
}

Affine Affine::scaled(int64_t k) const {
  Affine r;
  if (k == 0) return r;
  for (const auto& v : order) r.add_term(v, coeff.at(v) * k);
  r.constant = constant * k;
  return r;
}

std::optional<Affine> to_affine(const ExprPtr& e) {
  // Variables by name (every name is a variable here); literals up to 1e15.
  auto form = leir::affine_form<std::string>(*e, [](const std::string& v) { return std::optional<std::string>(v); },
                                              {.max_literal = 1'000'000'000'000'000, .max_product = std::nullopt});
  if (!form) return std::nullopt;
  Affine a;
  for (const auto& [v, c] : form->terms) a.add_term(v, c);
  a.constant = form->constant;
  return a;
}

ExprPtr to_expr(const Affine& a) {
  ExprPtr out;
  for (const auto& v : a.order) {
    int64_t c = a.coeff.at(v);
    ExprPtr term = leir::make_var(v);
    int64_t mag = c < 0 ? -c : c;
    if (mag != 1) term = leir::make_binary(BinaryOp::Mul, term, leir::make_int(mag));
    if (!out) out = c < 0 ? leir::make_neg(term) : term;
    else out = leir::make_binary(c < 0 ? BinaryOp::Sub : BinaryOp::Add, out, term);
  }
  if (!out) return leir::make_int(a.constant);
  if (a.constant > 0) out = leir::make_binary(BinaryOp::Add, out, leir::make_int(a.constant));
  if (a.constant < 0) out = leir::make_binary(BinaryOp::Sub, out, leir::make_int(-a.constant));
  return out;
}

Affine substitute(const Affine& a, const std::string& var, const Affine& by) {
  Affine r;
  for (const auto& v : a.order) {
    if (v == var) r += by.scaled(a.coeff.at(v));
    else r.add_term(v, a.coeff.at(v));
  }
  r.constant += a.constant;
  return r;
}

std::optional<Interval> bounds(const Affine& a, const std::map<std::string, Interval>& ranges) {
  Interval r{a.constant, a.constant};
  for (const auto& [v, c] : a.coeff) {
    auto it = ranges.find(v);
    if (it == ranges.end()) return std::nullopt;
    int64_t x = c * it->second.lo, y = c * it->second.hi;
    r.lo += std::min(x, y);
    r.hi += std::max(x, y);
  }
  return r;
}

}  // namespace steptp::analysis
