#include "ir/analysis/instance_order.h"

#include <map>
#include <optional>
#include <set>
#include <string>

#include "ir/analysis/affine.h"
#include "ir/leir/ir_mutator.h"

namespace steptp::analysis {

namespace {

void vars_of(const leir::ExprPtr& e, std::set<std::string>& out) {
  leir::for_each_expr(e, [&](const leir::Expr& x) {
    if (x.is_var()) out.insert(x.var_name());
  });
}

// The single variable of an affine form, if it has exactly one.
std::optional<std::string> sole_var(const Affine& a) {
  if (a.coeff.size() != 1) return std::nullopt;
  return a.coeff.begin()->first;
}

}  // namespace

Directions conflict_directions(const leir::Expr& a, const leir::Expr& b, const std::vector<leir::Loop>& loops) {
  Directions none;
  if (a.tensor != b.tensor || a.args.size() != b.args.size()) return none;
  std::map<std::string, int64_t> extent;
  for (const auto& l : loops) extent[l.var] = l.extent;

  // Per loop variable: an exact distance J-I, or "free" (any distance).
  std::map<std::string, int64_t> exact;
  std::set<std::string> free_vars;
  for (size_t d = 0; d < a.args.size(); ++d) {
    auto fa = to_affine(a.args[d]);
    auto fb = to_affine(b.args[d]);
    if (!fa || !fb) {
      vars_of(a.args[d], free_vars);
      vars_of(b.args[d], free_vars);
      continue;
    }
    if (fa->coeff.empty() && fb->coeff.empty()) {
      if (fa->constant != fb->constant) return none;  // distinct constant indices never meet
      continue;
    }
    auto va = sole_var(*fa), vb = sole_var(*fb);
    if (va && vb && *va == *vb && fa->coeff_of(*va) == fb->coeff_of(*vb) && extent.count(*va)) {
      // k*v_I + ca == k*v_J + cb  =>  v_J - v_I = (ca - cb) / k
      int64_t k = fa->coeff_of(*va);
      int64_t diff = fa->constant - fb->constant;
      if (diff % k != 0) return none;
      int64_t dist = diff / k;
      if (dist >= extent[*va] || -dist >= extent[*va]) return none;
      auto it = exact.find(*va);
      if (it != exact.end() && it->second != dist) return none;
      exact[*va] = dist;
      continue;
    }
    for (const auto& [v, c] : fa->coeff) free_vars.insert(v);
    for (const auto& [v, c] : fb->coeff) free_vars.insert(v);
  }

  // Enumerate lexicographic signs of the distance vector, outermost loop first.
  Directions out;
  for (const auto& l : loops) {
    bool is_free = free_vars.count(l.var) || !exact.count(l.var);
    if (is_free) {
      if (l.extent > 1) out.before = out.after = true;
      continue;  // the zero distance continues to the next loop
    }
    int64_t d = exact[l.var];
    if (free_vars.count(l.var)) d = 0;
    if (d > 0) { out.after = true; return out; }
    if (d < 0) { out.before = true; return out; }
  }
  out.same = true;
  return out;
}

}  // namespace steptp::analysis
