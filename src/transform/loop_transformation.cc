// Loop transformations (STRATEGIES.md 9-12): loop_reorder, loop_tiling, loop_split and its real
// inverse loop_fusion. Legality comes from ir/analysis/dependence.h: a permutation may not change
// the direction of any dependence except an accumulation's combination order (then the result
// is `reassoc` for + and *, `exact` for max/min). Subscripts stay flat (`o*16+i`).
#include <algorithm>
#include <numeric>

#include "ir/analysis/affine.h"
#include "ir/analysis/dependence.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/leir/ir_mutator.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using analysis::NestRef;
using leir::Loop;
using leir::LoopKind;
using leir::Program;

std::vector<std::vector<int>> candidate_perms(int n) {
  std::vector<std::vector<int>> out;
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  if (n <= 4) {
    while (std::next_permutation(p.begin(), p.end())) out.push_back(p);
    return out;
  }
  // Larger bands: every transposition of two loops (the full space grows factorially).
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      auto q = p;
      std::swap(q[i], q[j]);
      out.push_back(q);
    }
  return out;
}

std::vector<int> perm_of(const Params& params) {
  const auto& v = std::get<std::vector<int64_t>>(params.at("order"));
  return std::vector<int>(v.begin(), v.end());
}

class LoopReorder final : public Strategy {
 public:
  std::string_view name() const override { return "loop_reorder"; }
  std::string_view description() const override {
    return "permute the loops of a nest when no dependence is reversed";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey s;
    for (const auto& n : st.nests()) {
      std::string where = "nest " + loops::path_text(n.path);
      if (n.nest->loops.size() < 2) {
        s.refusals.push_back({where, "only one loop"});
        continue;
      }
      if (legal_perms(n, st.dependences(n.path)).empty()) {
        std::string reason;
        const auto& deps = st.dependences(n.path);
        for (const auto& perm : candidate_perms(static_cast<int>(n.nest->loops.size())))
          if (!analysis::permutation_legal(n, deps, perm, nullptr, &reason)) break;
        s.refusals.push_back({where, "every permutation reverses a dependence: " + reason});
        continue;
      }
      s.sites.push_back({n.path, {}, where});
    }
    return s;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& site) const override {
    std::vector<Params> out;
    for (const auto& perm : legal_perms(st.nest_at(site.path), st.dependences(site.path)))
      out.push_back({{"order", std::vector<int64_t>(perm.begin(), perm.end())}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    auto perm = perm_of(params);
    if (perm.size() != n.nest->loops.size()) return refuse(site, "the order does not permute the nest's loops");
    bool reassoc = false;
    std::string reason;
    if (!analysis::permutation_legal(n, st.dependences(site.path), perm, &reassoc, &reason)) return refuse(site, reason);
    leir::Nest out = *n.nest;
    for (size_t k = 0; k < perm.size(); ++k) out.loops[k] = n.nest->loops[perm[k]];
    return candidate(st, site, params, reassoc ? Exactness::Reassoc : Exactness::Exact,
                     loops::with_items(p, site.path, {leir::Item::of(std::move(out))}));
  }

 private:
  static std::vector<std::vector<int>> legal_perms(const NestRef& n, const std::vector<analysis::DepPair>& deps) {
    std::vector<std::vector<int>> out;
    for (const auto& perm : candidate_perms(static_cast<int>(n.nest->loops.size())))
      if (analysis::permutation_legal(n, deps, perm, nullptr, nullptr)) out.push_back(perm);
    return out;
  }
};

class LoopSplit final : public Strategy {
 public:
  std::string_view name() const override { return "loop_split"; }
  std::string_view description() const override {
    return "split a loop of extent n into outer f x inner n/f with flat subscripts o*(n/f)+i";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey s;
    for (const auto& n : st.nests())
      for (int k = 0; k < static_cast<int>(n.nest->loops.size()); ++k) {
        std::string where = loops::loop_site_text(n, k);
        if (loops::proper_divisors(n.nest->loops[k].extent).empty())
          s.refusals.push_back({where, "extent " + std::to_string(n.nest->loops[k].extent) +
                                           " has no factor 1<f<n (remainders are not generated)"});
        else
          s.sites.push_back({n.path, {k}, where});
      }
    return s;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& site) const override {
    NestRef n = st.nest_at(site.path);
    std::vector<Params> out;
    for (int64_t f : loops::proper_divisors(n.nest->loops[site.detail.at(0)].extent))
      out.push_back({{"factor", f}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    int k = site.detail.at(0);
    int64_t f = std::get<int64_t>(params.at("factor"));
    int64_t extent = n.nest->loops[k].extent;
    if (f <= 1 || f >= extent || extent % f)
      return refuse(site, "factor " + std::to_string(f) + " is not a proper divisor of " + std::to_string(extent));
    analysis::NameAllocator names(p);
    leir::Nest out = loops::split_loop(*n.nest, k, f, names);
    return candidate(st, site, params, Exactness::Exact,
                     loops::with_items(p, site.path, {leir::Item::of(std::move(out))}));
  }
};

class LoopTiling final : public Strategy {
 public:
  std::string_view name() const override { return "loop_tiling"; }
  std::string_view description() const override {
    return "tile two adjacent loops: two tile loops outside, two intra-tile loops inside";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey s;
    for (const auto& n : st.nests()) {
      if (n.nest->loops.size() < 2) continue;
      const auto& deps = st.dependences(n.path);
      for (int k = 0; k + 1 < static_cast<int>(n.nest->loops.size()); ++k) {
        const Loop &x = n.nest->loops[k], &y = n.nest->loops[k + 1];
        std::string where = "nest " + loops::path_text(n.path) + ", loops " + x.var + "," + y.var;
        if (loops::proper_divisors(x.extent).empty() || loops::proper_divisors(y.extent).empty()) {
          s.refusals.push_back({where, "an extent has no factor 1<f<n"});
          continue;
        }
        std::string reason;
        if (!legal(n, deps, k, nullptr, &reason)) {
          s.refusals.push_back({where, reason});
          continue;
        }
        s.sites.push_back({n.path, {k}, where});
      }
    }
    return s;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& site) const override {
    NestRef n = st.nest_at(site.path);
    int k = site.detail.at(0);
    std::vector<Params> out;
    for (int64_t tx : loops::proper_divisors(n.nest->loops[k].extent))
      for (int64_t ty : loops::proper_divisors(n.nest->loops[k + 1].extent))
        out.push_back({{"tiles", std::vector<int64_t>{tx, ty}}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    int k = site.detail.at(0);
    const auto& tiles = std::get<std::vector<int64_t>>(params.at("tiles"));
    if (tiles.size() != 2) return refuse(site, "tiles must give two sizes");
    int64_t nx = n.nest->loops[k].extent, ny = n.nest->loops[k + 1].extent;
    if (tiles[0] <= 1 || tiles[0] >= nx || nx % tiles[0] || tiles[1] <= 1 || tiles[1] >= ny || ny % tiles[1])
      return refuse(site, "tile sizes are not proper divisors of the extents");
    bool reassoc = false;
    std::string reason;
    if (!legal(n, st.dependences(site.path), k, &reassoc, &reason)) return refuse(site, reason);
    analysis::NameAllocator names(p);
    // x -> xo,xi ; y -> yo,yi ; then xi and yo swap: xo yo xi yi.
    leir::Nest t = loops::split_loop(*n.nest, k, nx / tiles[0], names);
    t = loops::split_loop(t, k + 2, ny / tiles[1], names);
    std::swap(t.loops[k + 1], t.loops[k + 2]);
    return candidate(st, site, params, reassoc ? Exactness::Reassoc : Exactness::Exact,
                     loops::with_items(p, site.path, {leir::Item::of(std::move(t))}));
  }

 private:
  // Tiling runs (xo,yo) before (xi,yi): a dependence carried by both x and y may change
  // direction; one carried by only one of them keeps it.
  static bool legal(const NestRef& n, const std::vector<analysis::DepPair>& deps, int k, bool* reassoc,
                    std::string* reason) {
    const Loop *x = &n.nest->loops[k], *y = &n.nest->loops[k + 1];
    if (reassoc) *reassoc = false;
    for (const auto& d : deps) {
      bool cx = std::find(d.carried.begin(), d.carried.end(), x) != d.carried.end();
      bool cy = std::find(d.carried.begin(), d.carried.end(), y) != d.carried.end();
      if (!cx || !cy) continue;
      if (d.accumulation_self) {
        if (reassoc && d.op && analysis::reorder_changes_rounding(*d.op)) *reassoc = true;
        continue;
      }
      if (reason) *reason = "dependence on " + d.tensor + " carried by both " + x->var + " and " + y->var;
      return false;
    }
    return true;
  }
};

// loop_fusion: loops o (extent f) and i (extent m), adjacent, where every use of o and i is in an
// affine subscript with coeff(o) == m*coeff(i): the pair only ever forms o*m+i, so one loop j of
// extent f*m reproduces the same iteration order and the same elements.
class LoopFusion final : public Strategy {
 public:
  std::string_view name() const override { return "loop_fusion"; }
  std::string_view description() const override {
    return "merge two perfectly nested loops whose subscripts only use o*m+i into one loop of extent f*m";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    Survey s;
    for (const auto& n : st.nests())
      for (int k = 0; k + 1 < static_cast<int>(n.nest->loops.size()); ++k) {
        const Loop &o = n.nest->loops[k], &i = n.nest->loops[k + 1];
        std::string where = "nest " + loops::path_text(n.path) + ", loops " + o.var + "," + i.var;
        std::string reason = refusal(n, k);
        if (reason.empty()) s.sites.push_back({n.path, {k}, where});
        else s.refusals.push_back({where, reason});
      }
    return s;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    int k = site.detail.at(0);
    if (std::string why = refusal(n, k); !why.empty()) return refuse(site, why);
    const Loop &o = n.nest->loops[k], &i = n.nest->loops[k + 1];
    analysis::NameAllocator names(p);
    Loop j = o;
    j.extent = o.extent * i.extent;
    j.kind = fused_kind(o, i);
    j.var = j.kind == LoopKind::Bound ? o.var : names.fresh_var();
    std::string ov = o.var, iv = i.var;
    int64_t m = i.extent;
    leir::Nest out = *n.nest;
    out.loops.erase(out.loops.begin() + k + 1);
    out.loops[k] = j;
    out.body = leir::map_exprs(n.nest->body, [&](const leir::ExprPtr& e) { return fuse_expr(e, ov, iv, m, j.var); });
    return candidate(st, site, params, Exactness::Exact,
                     loops::with_items(p, site.path, {leir::Item::of(std::move(out))}));
  }

 private:
  static LoopKind fused_kind(const Loop& o, const Loop& i) {
    if (o.kind == i.kind) return o.kind;
    if (o.kind == LoopKind::Bound) return LoopKind::Bound;
    return LoopKind::Serial;
  }

  static std::string refusal(const NestRef& n, int k) {
    const Loop &o = n.nest->loops[k], &i = n.nest->loops[k + 1];
    if (o.start != 0 || i.start != 0) return "loops with nonzero start";
    if (i.kind == LoopKind::Bound && o.kind != LoopKind::Bound) return "inner loop is bound to a hardware axis";
    std::string why;
    bool any = false;
    leir::for_each_stmt(n.nest->body, [&](const leir::Stmt& s, const auto&) {
      for (const auto* e : {&s.lhs, &s.rhs}) {
        std::string w = check_uses(*e, o.var, i.var, i.extent, false, &any);
        if (why.empty()) why = w;
      }
    });
    if (!why.empty()) return why;
    if (!any) return "neither " + o.var + " nor " + i.var + " is used";
    // A bound outer loop stays bound after fusion: the fused loop must be independent.
    if (fused_kind(o, i) == LoopKind::Bound && i.kind != LoopKind::Bound) {
      if (analysis::check_loop(n, k + 1).kind != analysis::LoopDep::Independent)
        return "outer loop is bound but " + i.var + " carries a dependence";
    }
    return {};
  }

  // "" when every use of o/i in `e` sits in an affine subscript with coeff(o) == m*coeff(i).
  static std::string check_uses(const leir::ExprPtr& e, const std::string& o, const std::string& i, int64_t m,
                                bool, bool* any) {
    if (e->kind == leir::ExprKind::IndexVar && (e->var_name() == o || e->var_name() == i))
      return "loop variable " + e->var_name() + " used as a value";
    if (e->kind == leir::ExprKind::Access) {
      for (const auto& sub : e->args) {
        bool uo = analysis::uses_var(sub, o), ui = analysis::uses_var(sub, i);
        if (!uo && !ui) {
          std::string w = check_uses(sub, o, i, m, false, any);
          if (!w.empty()) return w;
          continue;
        }
        *any = true;
        auto a = analysis::to_affine(sub);
        if (!a) return "non-affine subscript uses " + o + "/" + i;
        if (a->coeff_of(o) != m * a->coeff_of(i))
          return "a subscript does not combine " + o + " and " + i + " as " + o + "*" + std::to_string(m) + "+" + i;
      }
      return {};
    }
    for (const auto& c : e->args) {
      std::string w = check_uses(c, o, i, m, false, any);
      if (!w.empty()) return w;
    }
    return {};
  }

  static leir::ExprPtr fuse_expr(const leir::ExprPtr& e, const std::string& o, const std::string& i, int64_t m,
                                 const std::string& j) {
    struct Fuser : leir::ExprMutator {
      const std::string *o, *i, *j;
      int64_t m;
      leir::ExprPtr visit_access(const leir::ExprPtr& e) override {
        std::vector<leir::ExprPtr> idx;
        bool changed = false;
        for (const auto& sub : e->args) {
          if (!analysis::uses_var(sub, *o) && !analysis::uses_var(sub, *i)) {
            auto s2 = mutate(sub);
            changed |= s2 != sub;
            idx.push_back(s2);
            continue;
          }
          auto a = *analysis::to_affine(sub);
          analysis::Affine r;
          for (const auto& v : a.order) {
            if (v == *o || v == *i) {
              if (!r.uses(*j)) r.add_term(*j, a.coeff_of(*i));
            } else {
              r.add_term(v, a.coeff.at(v));
            }
          }
          r.constant = a.constant;
          idx.push_back(analysis::to_expr(r));
          changed = true;
        }
        return changed ? analysis::with_indices(e, std::move(idx)) : e;
      }
    } f;
    f.o = &o;
    f.i = &i;
    f.j = &j;
    f.m = m;
    return f.mutate(e);
  }
};

RegisterStrategy<LoopReorder> loop_reorder_registrar(9);
RegisterStrategy<LoopTiling> loop_tiling_registrar(10);
RegisterStrategy<LoopSplit> loop_split_registrar(11);
RegisterStrategy<LoopFusion> loop_fusion_registrar(12);

}  // namespace
}  // namespace steptp::strategies
