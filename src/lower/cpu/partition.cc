#include "lower/cpu/partition.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/leir/int_math.h"
#include "ir/leir/ir_mutator.h"
#include "lower/accumulation.h"

namespace steptp::backend::cpu {

using analysis::Affine;
using analysis::Interval;
using leir::ExprPtr;

IterRange always_inside(int64_t a, Interval b, std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t start,
                        int64_t extent) {
  const int64_t stop = start + extent;
  int64_t first = start, last = stop;  // the iterations kept so far: [first, last)
  // Keeps the i with c*i >= x: i >= ceil(x/c) for c > 0, i <= floor(x/c) for c < 0 (the
  // division rounds toward -inf either way), all or none for c == 0.
  auto at_least = [&](int64_t c, int64_t x) {
    if (c > 0) first = std::max(first, leir::ceil_div(x, c));
    else if (c < 0) last = std::min(last, leir::floor_div(x, c) + 1);
    else if (x > 0) last = first;
  };
  if (lo) at_least(a, *lo - b.lo);           // a*i + b.lo >= lo
  if (hi) at_least(-a, b.hi - (*hi - 1));    // a*i + b.hi <= hi - 1
  const int64_t begin = std::clamp(first, start, stop);
  return {begin, std::clamp(last, begin, stop)};
}

namespace {

using Ranges = std::map<std::string, Interval>;

// One side of a bounds check, `f >= min` with f affine in loop variables.
struct BoundAtom {
  Affine f;
  int64_t min = 0;
};

// `x op y` as a BoundAtom; nullopt for == and != and anything not affine.
std::optional<BoundAtom> bound_atom(const ExprPtr& x, leir::CompareOp op, const ExprPtr& y) {
  auto ax = analysis::to_affine(x), ay = analysis::to_affine(y);
  if (!ax || !ay) return std::nullopt;
  // x < y  <=>  y - x >= 1;  x <= y  <=>  y - x >= 0;  x > y  <=>  x - y >= 1;  x >= y  <=>  x - y >= 0.
  const bool upper = op == leir::CompareOp::Lt || op == leir::CompareOp::Le;
  if (!upper && op != leir::CompareOp::Gt && op != leir::CompareOp::Ge) return std::nullopt;
  BoundAtom b;
  b.f = upper ? *ay : *ax;
  b.f += (upper ? *ax : *ay).scaled(-1);
  b.min = op == leir::CompareOp::Lt || op == leir::CompareOp::Gt ? 1 : 0;
  b.min -= b.f.constant;
  b.f.constant = 0;
  return b;
}

bool proven(const BoundAtom& b, const Ranges& r) {
  auto i = analysis::bounds(b.f, r);
  return i && i->lo >= b.min;
}

// The bounds checks of the conjunction `c` (`&` of comparison chains; anything else is opaque):
// each chain's affine atoms, `1 <= c+g < 129` as {c+g >= 1, 128 - c - g >= 0}.
void conjunct_checks(const ExprPtr& c, std::vector<std::vector<BoundAtom>>& out) {
  if (c->kind == leir::ExprKind::Binary && c->bop == leir::BinaryOp::And) {
    conjunct_checks(c->args[0], out);
    conjunct_checks(c->args[1], out);
  } else if (c->kind == leir::ExprKind::Compare) {
    std::vector<BoundAtom> check;
    for (size_t k = 0; k < c->cmp_ops.size(); ++k)
      if (auto b = bound_atom(c->args[k], c->cmp_ops[k], c->args[k + 1])) check.push_back(std::move(*b));
    if (!check.empty()) out.push_back(std::move(check));
  }
}

// `c` without the atoms that hold over `r`; nullptr when nothing is left (true); `c` itself when
// nothing holds.
ExprPtr prune_condition(const ExprPtr& c, const Ranges& r) {
  if (c->kind == leir::ExprKind::Binary && c->bop == leir::BinaryOp::And) {
    ExprPtr x = prune_condition(c->args[0], r), y = prune_condition(c->args[1], r);
    if (x == c->args[0] && y == c->args[1]) return c;
    if (!x || !y) return x ? x : y;
    return leir::make_binary(leir::BinaryOp::And, x, y, c->loc);
  }
  if (c->kind != leir::ExprKind::Compare) return c;
  const size_t n = c->cmp_ops.size();
  std::vector<char> holds(n, 0);
  for (size_t k = 0; k < n; ++k) {
    auto b = bound_atom(c->args[k], c->cmp_ops[k], c->args[k + 1]);
    holds[k] = b && proven(*b, r);
  }
  if (std::none_of(holds.begin(), holds.end(), [](char h) { return h; })) return c;
  // The runs of atoms that may fail stay chains (`a <= x < b` minus a proven `a <= x` is `x < b`).
  ExprPtr out;
  for (size_t k = 0; k < n;) {
    if (holds[k]) {
      ++k;
      continue;
    }
    size_t m = k;
    while (m < n && !holds[m]) ++m;
    ExprPtr run = leir::make_compare({c->args.begin() + long(k), c->args.begin() + long(m) + 1},
                                     {c->cmp_ops.begin() + long(k), c->cmp_ops.begin() + long(m)}, c->loc);
    out = out ? leir::make_binary(leir::BinaryOp::And, out, run, c->loc) : run;
    k = m;
  }
  return out;
}

// if_then_else(c, a, b) with the atoms of c that hold over the ranges dropped: a alone when all do.
class BoundsCheckPruner : public leir::ExprMutator {
 public:
  explicit BoundsCheckPruner(Ranges r) : r_(std::move(r)) {}

 protected:
  ExprPtr visit_call(const ExprPtr& e) override {
    ExprPtr m = mutate_children(e);
    if (!m->is_call(leir::Func::IfThenElse) || m->args.size() != 3) return m;
    ExprPtr c = prune_condition(m->args[0], r_);
    if (!c) return m->args[1];
    if (c == m->args[0]) return m;
    return leir::make_call(leir::Func::IfThenElse, {c, m->args[1], m->args[2]}, m->loc);
  }

 private:
  Ranges r_;
};

Ranges with_loops(Ranges r, const std::vector<leir::Loop>& loops, size_t count) {
  for (size_t k = 0; k < count; ++k) r[loops[k].var] = {loops[k].start, loops[k].start + loops[k].extent - 1};
  return r;
}

class Partitioner {
 public:
  int split = 0;

  // `n` partitioned, or nullopt when nothing is split. `r`: the ranges of the enclosing loops.
  std::optional<leir::Nest> nest(const leir::Nest& n, const Ranges& r, int depth) {
    const Ranges all = with_loops(r, n.loops, n.loops.size());
    if (std::any_of(n.body.begin(), n.body.end(), [](const leir::Item& i) { return i.is_nest(); })) {
      bool changed = false;
      std::vector<leir::Item> body;
      for (const auto& it : n.body) {
        auto sub = it.is_nest() ? nest(it.nest, all, depth) : std::nullopt;
        changed |= sub.has_value();
        body.push_back(sub ? leir::Item::of(std::move(*sub)) : it);
      }
      if (!changed) return std::nullopt;
      leir::Nest out = n;
      out.body = std::move(body);
      return out;
    }
    if (depth >= kMaxDepth) return std::nullopt;
    // The checks that may fail here, over loop variables alone.
    std::vector<std::vector<BoundAtom>> checks;
    for (const auto& it : n.body)
      for (const ExprPtr& side : {it.stmt.lhs, it.stmt.rhs})
        leir::for_each_expr(side, [&](const leir::Expr& e) {
          if (e.kind == leir::ExprKind::Call && e.func == leir::Func::IfThenElse && e.args.size() == 3)
            conjunct_checks(e.args[0], checks);
        });
    std::erase_if(checks, [&](const std::vector<BoundAtom>& c) {
      return std::any_of(c.begin(), c.end(), [&](const BoundAtom& b) { return !analysis::bounds(b.f, all); }) ||
             std::all_of(c.begin(), c.end(), [&](const BoundAtom& b) { return proven(b, all); });
    });
    const bool unrolled = std::any_of(n.loops.begin(), n.loops.end(),
                                      [](const leir::Loop& l) { return l.kind == leir::LoopKind::Unrolled; });
    for (size_t k = 0; k < n.loops.size() && !checks.empty(); ++k) {
      const leir::Loop& l = n.loops[k];
      // Loops over the written elements only, serial or the innermost vector loop of a nest
      // without unrolled rows: a parallel run keeps its collapse, a register tile (unrolled rows
      // of whole vectors) its shape, a reduction loop the block kept over it.
      const bool vector_row = l.kind == leir::LoopKind::Vectorized && k + 1 == n.loops.size() && !unrolled;
      if ((l.kind != leir::LoopKind::Serial && !vector_row) || l.extent < 2) continue;
      auto writes_along = [&](const leir::Item& it) { return mentions_var(it.stmt.lhs, l.var); };
      if (std::none_of(n.body.begin(), n.body.end(), writes_along)) continue;
      IterRange in{l.start, l.start + l.extent};
      bool any = false;
      for (const auto& check : checks) {
        IterRange both = in;
        bool uses = false;
        for (const auto& b : check) {
          const int64_t a = b.f.coeff_of(l.var);
          if (a == 0) continue;
          uses = true;
          Affine rest = b.f;
          rest.add_term(l.var, -a);
          const IterRange here = always_inside(a, *analysis::bounds(rest, all), b.min, std::nullopt, l.start, l.extent);
          both.begin = std::max(both.begin, here.begin);
          both.end = std::max(both.begin, std::min(both.end, here.end));
        }
        // A steady state: the interior holds at least half the loop (a causal mask's `j <= i`
        // holds everywhere only on the last row, and stays a condition).
        if (!uses || 2 * (both.end - both.begin) < l.extent) continue;
        in = both;
        any = true;
      }
      if (!any) continue;
      ++split;
      leir::Nest out{{n.loops.begin(), n.loops.begin() + long(k)}, {}, n.loc};
      const Ranges outer = with_loops(r, n.loops, k);
      for (IterRange part : {IterRange{l.start, in.begin}, in, IterRange{in.end, l.start + l.extent}}) {
        if (part.begin == part.end) continue;
        leir::Nest sub{{n.loops.begin() + long(k), n.loops.end()}, n.body, n.loc};
        sub.loops[0].start = part.begin;
        sub.loops[0].extent = part.end - part.begin;
        if (auto deeper = nest(sub, outer, depth + 1)) {
          sub = std::move(*deeper);
        } else {
          BoundsCheckPruner prune(with_loops(outer, sub.loops, sub.loops.size()));
          sub.body = leir::map_exprs(sub.body, [&](const ExprPtr& e) { return prune.mutate(e); });
        }
        // A split at the sub-nest's first loop comes back without loops: its parts join this body.
        if (sub.loops.empty()) out.body.insert(out.body.end(), sub.body.begin(), sub.body.end());
        else out.body.push_back(leir::Item::of(std::move(sub)));
      }
      return out;
    }
    return std::nullopt;
  }

 private:
  // Splits along one path of nests (rows and columns of a 2-D convolution): at most 3^2 copies
  // of a body.
  static constexpr int kMaxDepth = 2;
};

}  // namespace

leir::Program partition_loops(const leir::Program& p, int* split) {
  Partitioner part;
  std::optional<leir::Program> out;
  // Tensors a later top-level item accumulates into: the nests that write them stay whole.
  std::vector<std::set<std::string>> accumulated_after(p.body.size() + 1);
  for (size_t i = p.body.size(); i-- > 0;) {
    accumulated_after[i] = accumulated_after[i + 1];
    leir::for_each_stmt({p.body[i]}, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) {
      if (accumulation_op(s)) accumulated_after[i].insert(s.lhs->tensor);
    });
  }
  for (size_t i = 0; i < p.body.size(); ++i) {
    if (!p.body[i].is_nest()) continue;
    bool feeds_accumulation = false;
    leir::for_each_stmt({p.body[i]}, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) {
      feeds_accumulation |= accumulated_after[i + 1].count(s.lhs->tensor) > 0;
    });
    if (feeds_accumulation) continue;
    if (auto n = part.nest(p.body[i].nest, {}, 0)) {
      if (!out) out = p;
      out->body[i] = leir::Item::of(std::move(*n));
    }
  }
  if (split) *split = part.split;
  return out ? std::move(*out) : p;
}

}  // namespace steptp::backend::cpu
