#include "ir/analysis/dependence.h"

#include <algorithm>
#include <map>

#include "ir/analysis/affine.h"
#include "ir/leir/printer.h"

namespace steptp::analysis {

using leir::ExprPtr;
using leir::Loop;

std::string_view to_string(DepKind k) {
  switch (k) {
    case DepKind::RAW: return "RAW";
    case DepKind::WAR: return "WAR";
    case DepKind::WAW: return "WAW";
  }
  return "?";
}

std::vector<ItemConflict> item_conflicts(const leir::Item& first, const leir::Item& second) {
  auto a = read_write(first), b = read_write(second);
  std::vector<ItemConflict> out;
  for (const auto& t : a.writes)
    if (b.reads.count(t)) out.push_back({t, DepKind::RAW});
  for (const auto& t : a.reads)
    if (b.writes.count(t)) out.push_back({t, DepKind::WAR});
  for (const auto& t : a.writes)
    if (b.writes.count(t)) out.push_back({t, DepKind::WAW});
  return out;
}

namespace {

// The loop binding `var` for an access under `loops` (innermost binding wins).
const Loop* binding(const std::vector<const Loop*>& loops, const std::string& var) {
  for (auto it = loops.rbegin(); it != loops.rend(); ++it)
    if ((*it)->var == var) return *it;
  return nullptr;
}

Interval range_of(const Loop* l) { return {l->start, l->start + l->extent - 1}; }

// Interval of (b - a) where b's and a's terms on loops in `equal` are merged (same value) and
// every other variable ranges independently. `skip` is left out of both.
std::optional<Interval> difference_bounds(const Affine& fa, const std::vector<const Loop*>& la,
                                          const Affine& fb, const std::vector<const Loop*>& lb,
                                          const std::set<const Loop*>& equal, const Loop* skip) {
  std::map<const Loop*, int64_t> merged;  // coefficient of (shared value) for equal loops
  Interval r{fb.constant - fa.constant, fb.constant - fa.constant};
  auto add_range = [&](int64_t c, Interval iv) {
    int64_t x = c * iv.lo, y = c * iv.hi;
    r.lo += std::min(x, y);
    r.hi += std::max(x, y);
  };
  for (const auto& [v, c] : fa.coeff) {
    const Loop* l = binding(la, v);
    if (!l) return std::nullopt;
    if (l == skip) continue;
    if (equal.count(l)) merged[l] -= c;
    else add_range(-c, range_of(l));
  }
  for (const auto& [v, c] : fb.coeff) {
    const Loop* l = binding(lb, v);
    if (!l) return std::nullopt;
    if (l == skip) continue;
    if (equal.count(l)) merged[l] += c;
    else add_range(c, range_of(l));
  }
  for (const auto& [l, c] : merged) add_range(c, range_of(l));
  return r;
}

bool some_nonzero_multiple(int64_t k, Interval iv, int64_t max_m) {
  if (k < 0) {
    k = -k;
    iv = {-iv.hi, -iv.lo};
  }
  // m in [ceil(lo/k), floor(hi/k)] ∩ [-max_m, max_m] \ {0}
  auto floordiv = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  int64_t lo = -floordiv(-iv.lo, k), hi = floordiv(iv.hi, k);
  lo = std::max(lo, -max_m);
  hi = std::min(hi, max_m);
  if (lo > hi) return false;
  return !(lo == 0 && hi == 0);
}

}  // namespace

std::set<const Loop*> proven_equal(const AccessAt& a, const AccessAt& b, const std::vector<const Loop*>& candidates,
                                   const std::set<const Loop*>& assumed_equal) {
  std::set<const Loop*> equal = assumed_equal;
  std::vector<std::optional<Affine>> fa, fb;
  size_t rank = std::min(a.access->args.size(), b.access->args.size());
  for (size_t d = 0; d < rank; ++d) {
    fa.push_back(to_affine(a.access->args[d]));
    fb.push_back(to_affine(b.access->args[d]));
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (const Loop* l : candidates) {
      if (equal.count(l)) continue;
      for (size_t d = 0; d < rank; ++d) {
        if (!fa[d] || !fb[d]) continue;
        if (binding(*a.loops, l->var) != l || binding(*b.loops, l->var) != l) continue;
        int64_t ka = fa[d]->coeff_of(l->var), kb = fb[d]->coeff_of(l->var);
        if (ka == 0 || ka != kb) continue;
        auto diff = difference_bounds(*fa[d], *a.loops, *fb[d], *b.loops, equal, l);
        if (!diff) continue;
        if (!some_nonzero_multiple(ka, *diff, l->extent - 1)) {
          equal.insert(l);
          changed = true;
          break;
        }
      }
    }
  }
  std::set<const Loop*> out;
  for (const Loop* l : candidates)
    if (equal.count(l)) out.insert(l);
  return out;
}

namespace {

struct Occ {
  int stmt;
  ExprPtr access;
  bool write;
};

std::vector<Occ> occurrences(const std::vector<StmtRef>& stmts) {
  std::vector<Occ> out;
  for (size_t i = 0; i < stmts.size(); ++i) {
    out.push_back({static_cast<int>(i), stmts[i].stmt->lhs, true});
    for (const auto& r : reads_of(*stmts[i].stmt)) out.push_back({static_cast<int>(i), r, false});
  }
  return out;
}

std::vector<DepPair> dependences(const std::vector<StmtRef>& stmts, const std::vector<const Loop*>& band,
                                 const std::set<const Loop*>& assumed) {
  std::vector<DepPair> out;
  auto occ = occurrences(stmts);
  std::vector<std::optional<Accumulation>> acc(stmts.size());
  for (size_t i = 0; i < stmts.size(); ++i) acc[i] = accumulation_of(*stmts[i].stmt);
  for (size_t x = 0; x < occ.size(); ++x) {
    for (size_t y = x; y < occ.size(); ++y) {
      const Occ &p = occ[x], &q = occ[y];
      if (!p.write && !q.write) continue;
      if (p.access->tensor != q.access->tensor) continue;
      if (x == y && !p.write) continue;
      DepPair d;
      d.stmt_a = p.stmt;
      d.stmt_b = q.stmt;
      d.access_a = p.access;
      d.access_b = q.access;
      d.tensor = p.access->tensor;
      if (p.stmt == q.stmt && acc[p.stmt] && acc[p.stmt]->other_self_reads == 0) {
        const auto& s = *stmts[p.stmt].stmt;
        auto is_self = [&](const ExprPtr& e) { return e == s.lhs || e == acc[p.stmt]->self; };
        if (is_self(p.access) && is_self(q.access)) {
          d.accumulation_self = true;
          d.op = acc[p.stmt]->op;
        }
      }
      AccessAt aa{p.access, &stmts[p.stmt].loops}, bb{q.access, &stmts[q.stmt].loops};
      auto eq = proven_equal(aa, bb, band, assumed);
      for (const Loop* l : band)
        if (!eq.count(l)) d.carried.push_back(l);
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::string describe(const DepPair& d, const std::vector<StmtRef>& stmts) {
  return "tensor " + d.tensor + " (" + leir::print_expr(d.access_a) + " vs " + leir::print_expr(d.access_b) +
         " in " + leir::print_stmt(*stmts[d.stmt_a].stmt) +
         (d.stmt_a == d.stmt_b ? "" : " and " + leir::print_stmt(*stmts[d.stmt_b].stmt)) + ")";
}

}  // namespace

std::vector<DepPair> nest_dependences(const NestRef& n) {
  auto stmts = stmts_in(n);
  std::vector<const Loop*> band;
  for (const auto& l : n.nest->loops) band.push_back(&l);
  std::set<const Loop*> assumed(n.outer.begin(), n.outer.end());
  return dependences(stmts, band, assumed);
}

LoopCheck check_loop(const NestRef& n, int loop_index) {
  auto stmts = stmts_in(n);
  const Loop* target = &n.nest->loops[loop_index];
  std::set<const Loop*> assumed(n.outer.begin(), n.outer.end());
  for (int k = 0; k < loop_index; ++k) assumed.insert(&n.nest->loops[k]);
  auto deps = dependences(stmts, {target}, assumed);
  LoopCheck out;
  for (const auto& d : deps) {
    if (d.carried.empty()) continue;
    if (d.accumulation_self) {
      if (out.kind == LoopDep::Independent) {
        out.kind = LoopDep::ReductionOnly;
        out.reason = "iterations of " + target->var + " accumulate into one element of " + describe(d, stmts);
      }
      continue;
    }
    out.kind = LoopDep::Carried;
    out.reason = "iterations of " + target->var + " conflict on " + describe(d, stmts);
    return out;
  }
  return out;
}

bool permutation_legal(const NestRef& n, const std::vector<DepPair>& deps, const std::vector<int>& perm,
                       bool* reassoc, std::string* reason) {
  std::map<const Loop*, int> new_pos;
  for (size_t k = 0; k < perm.size(); ++k) new_pos[&n.nest->loops[perm[k]]] = static_cast<int>(k);
  if (reassoc) *reassoc = false;
  for (const auto& d : deps) {
    bool order_kept = true;
    for (size_t k = 1; k < d.carried.size(); ++k)
      if (new_pos[d.carried[k - 1]] > new_pos[d.carried[k]]) order_kept = false;
    if (order_kept) continue;
    if (d.accumulation_self) {
      if (reassoc && d.op && reorder_changes_rounding(*d.op)) *reassoc = true;
      continue;
    }
    if (reason) {
      std::string loops;
      for (const Loop* l : d.carried) loops += (loops.empty() ? "" : ",") + l->var;
      *reason = "dependence on " + d.tensor + " carried by loops " + loops + " would change direction";
    }
    return false;
  }
  return true;
}

}  // namespace steptp::analysis
