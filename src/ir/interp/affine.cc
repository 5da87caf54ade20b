#include "ir/interp/affine.h"

#include <algorithm>

#include "ir/leir/affine.h"

namespace steptp::interp {

std::optional<Linear> to_linear(const leir::Expr& e, const VarScope& scope) {
  // Literals below 1e9 and products by a constant up to 2^40, so that the offset arithmetic of
  // the compiled accesses stays far from int64 overflow.
  auto form = leir::affine_form<int>(
      e,
      [&](const std::string& name) {
        const int v = scope.find(name);
        return v < 0 ? std::nullopt : std::optional<int>(v);
      },
      {.max_literal = 999'999'999, .max_product = int64_t{1} << 40});
  if (!form) return std::nullopt;
  Linear out{form->constant, {}};
  for (const auto& [v, c] : form->terms) out.terms.push_back({v, c});
  return out;
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
