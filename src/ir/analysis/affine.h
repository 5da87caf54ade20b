// Affine index expressions: sum of coeff*var + constant over loop variables.
//
// Subscripts the public translator writes (`tx`, `c+g`, `c*2+f`, `a-1`) are affine; gathers,
// `//` and `%` are not. Dependence tests and loop rewrites work on this form, and `to_expr`
// prints it back flat (`o*64+i*4+f`), never as a tower of parentheses.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

struct Affine {
  // Nonzero coefficients only. `order` keeps the variables in order of first appearance so that
  // printing back keeps the source's term order.
  std::map<std::string, int64_t> coeff;
  std::vector<std::string> order;
  int64_t constant = 0;

  int64_t coeff_of(const std::string& var) const;
  bool uses(const std::string& var) const { return coeff.count(var) != 0; }
  void add_term(const std::string& var, int64_t c);  // merges, drops zero coefficients
  Affine& operator+=(const Affine& o);
  Affine scaled(int64_t k) const;
};

// nullopt when `e` is not affine in loop variables (accesses, //, %, products of variables,
// non-integer literals).
std::optional<Affine> to_affine(const leir::ExprPtr& e);

// Flat expression: terms in `order`, `v` for coefficient 1, `v*k` otherwise, `-v` / `-v*k` for
// negative ones, then `+k` / `-k`. An all-zero form prints as `0`.
leir::ExprPtr to_expr(const Affine& a);

// Replaces variable `var` by the affine form `by` (e.g. tx -> o*16+i).
Affine substitute(const Affine& a, const std::string& var, const Affine& by);

struct Interval {
  int64_t lo = 0, hi = 0;
};
// Range of the affine form when each variable ranges over `ranges`; nullopt if a variable has no
// range.
std::optional<Interval> bounds(const Affine& a, const std::map<std::string, Interval>& ranges);

}  // namespace steptp::analysis
