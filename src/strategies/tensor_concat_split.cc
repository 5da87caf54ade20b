// 4 tensor_concat_to_fuse_operators, 5 tensor_split_to_decouple_operators and
// 35 partially_equivalent_then_correct (STRATEGIES.md).
//
// Concat: two single-statement nests computing the same operation skeleton (equal up to which
// tensors they read and write) over loops that differ at most in the extent of one axis v. The
// tensors indexed by v are copied into buffers concatenated along v, one nest computes over the
// concatenated domain, and copies split the result back. Tensors not indexed by v must be the
// same tensor in both (shared weights). Every element is computed by the same operations in the
// same order: exact.
//
// Split: one single-statement nest split along a loop v at a point t. A spatial v (in the
// written subscripts): inputs indexed by v are copied into two slices, each half computes into
// its own buffer, copies write them back. A reduction v: two partial reductions over [0,t) and
// [t,n) and a combine X = X (op) (P1 (op) P2) over only the loops of X's subscripts (so each
// element combines once; the public code combined once per remaining reduction iteration).
//
// Partially equivalent then correct: two identical zero-padded convolutions (pad nest + conv
// nest, same weights) on different inputs X1, X2. The inputs are concatenated along a spatial
// axis, padded once, convolved once; rows of the result whose window stays inside one input
// equal the original outputs and are copied out; the seam rows whose window crosses into the
// other input (or would have read padding) are recomputed from the original padded inputs.
#include <fmt/format.h>

#include "analysis/accumulation.h"
#include "analysis/affine.h"
#include "analysis/names.h"
#include "leir/ir_mutator.h"
#include "leir/tensors.h"
#include "strategies/dataflow_util.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

// ---- shared pieces ---------------------------------------------------------------------------

const Stmt* single_stmt(const Program& p, int i) {
  const Nest* n = flat_nest(p, i);
  return n && n->body.size() == 1 ? &n->body[0].stmt : nullptr;
}

// Structural equality up to a consistent renaming of tensors (first -> second).
bool iso(const ExprPtr& a, const ExprPtr& b, std::map<std::string, std::string>& names) {
  if (a->kind != b->kind || a->args.size() != b->args.size()) return false;
  switch (a->kind) {
    case ExprKind::Number: if (a->value != b->value) return false; break;
    case ExprKind::IndexVar: if (a->var_name() != b->var_name()) return false; break;
    case ExprKind::Access: {
      if (a->dtype != b->dtype) return false;
      auto [it, fresh] = names.emplace(a->tensor, b->tensor);
      if (!fresh && it->second != b->tensor) return false;
      break;
    }
    case ExprKind::Unary: break;
    case ExprKind::Binary: if (a->bop != b->bop) return false; break;
    case ExprKind::Compare: if (a->cmp_ops != b->cmp_ops) return false; break;
    case ExprKind::Call: if (a->func != b->func) return false; break;
  }
  for (size_t k = 0; k < a->args.size(); ++k)
    if (!iso(a->args[k], b->args[k], names)) return false;
  return true;
}

bool iso_stmt(const Stmt& a, const Stmt& b, std::map<std::string, std::string>& names) {
  return iso(a.lhs, b.lhs, names) && iso(a.rhs, b.rhs, names);
}

// Vars used as values (outside every subscript).
bool used_as_value(const ExprPtr& e, const std::string& v) {
  if (e->is_var()) return e->var_name() == v;
  if (e->is_access()) return false;
  for (const auto& a : e->args)
    if (used_as_value(a, v)) return true;
  return false;
}

// Dimension where `access` uses `v` as a plain subscript, -1 if it does not use v at all,
// -2 if it uses v any other way (inside a compound subscript, a gather, or twice).
int plain_dim(const Expr& access, const std::string& v) {
  int dim = -1;
  for (size_t d = 0; d < access.args.size(); ++d) {
    const auto& i = access.args[d];
    if (i->is_var() && i->var_name() == v) {
      if (dim != -1) return -2;
      dim = static_cast<int>(d);
    } else if (vars_in(i).count(v)) {
      return -2;
    }
  }
  return dim;
}

void collect_accesses(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->is_access()) out.push_back(e);
  for (const auto& a : e->args) collect_accesses(a, out);
}

// A nest copying a `count`-wide slab along `dim` of a tensor of `shape`:
// Dst_{i.., j+dst_off, ..} = Src_{i.., j+src_off, ..}; several such statements share one nest
// when their slabs have the same extents.
Nest copy_nest(const std::vector<int64_t>& shape, int dim, int64_t count,
               const std::vector<std::tuple<ExprPtr, std::string, int64_t, ExprPtr, std::string, int64_t>>& copies) {
  std::vector<Loop> loops;
  auto names = analysis::standalone_vars(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    Loop l;
    l.kind = d == 0 ? leir::LoopKind::Bound : leir::LoopKind::Serial;
    l.var = d == 0 ? "tx" : names[d - 1];
    l.extent = static_cast<int>(d) == dim ? count : shape[d];
    loops.push_back(l);
  }
  std::vector<Stmt> stmts;
  for (const auto& [dst_like, dst, dst_off, src_like, src, src_off] : copies) {
    std::vector<ExprPtr> di, si;
    for (size_t d = 0; d < shape.size(); ++d) {
      auto v = leir::make_var(loops[d].var);
      bool here = static_cast<int>(d) == dim;
      di.push_back(here ? plus_const(v, dst_off) : v);
      si.push_back(here ? plus_const(v, src_off) : v);
    }
    stmts.push_back(make_stmt(access_like(*dst_like, dst, di), access_like(*src_like, src, si)));
  }
  return make_nest(loops, stmts);
}

std::vector<Loop> with_extent(std::vector<Loop> loops, const std::string& v, int64_t extent) {
  for (auto& l : loops)
    if (l.var == v) l.extent = extent;
  return loops;
}

const Loop* loop_of(const Nest& n, const std::string& v) {
  for (const auto& l : n.loops)
    if (l.var == v) return &l;
  return nullptr;
}

bool written_in(const analysis::UseDef& ud, const std::string& t, int from, int to) {  // [from, to)
  for (int k = std::max(0, from); k < to && k < static_cast<int>(ud.items.size()); ++k)
    if (ud.items[k].writes.count(t)) return true;
  return false;
}

// Rewrites accesses: tensors in `rename` get a new name (subscripts kept as written, before
// `shift`); everything else has variable v shifted by `shift` (subscripts and values).
ExprPtr shifted(const ExprPtr& e, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename) {
  class Shift : public leir::ExprMutator {
   public:
    Shift(const std::string& v, int64_t s, const std::map<std::string, std::string>& r) : v_(v), s_(s), r_(r) {}
   protected:
    ExprPtr visit_access(const ExprPtr& e) override {
      auto it = r_.find(e->tensor);
      if (it == r_.end()) return mutate_children(e);
      auto copy = std::make_shared<Expr>(*e);
      copy->tensor = it->second;
      return copy;
    }
    ExprPtr visit_var(const ExprPtr& e) override {
      return e->var_name() == v_ && s_ != 0 ? plus_const(e, s_) : e;
    }
   private:
    const std::string& v_;
    int64_t s_;
    const std::map<std::string, std::string>& r_;
  } m(v, shift, rename);
  return m.mutate(e);
}

Stmt shifted_stmt(const Stmt& s, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename) {
  return make_stmt(shifted(s.lhs, v, shift, rename), shifted(s.rhs, v, shift, rename));
}

std::vector<int64_t> shape_of(const leir::TensorTable& t, const std::string& name) { return t.at(name).shape; }

// ---- 4 tensor_concat_to_fuse_operators --------------------------------------------------------

struct ConcatPlan {
  int first = -1, second = -1;
  std::string axis;
  int64_t n1 = 0, n2 = 0;
  std::map<std::string, std::string> names;                 // first's tensors -> second's
  std::vector<std::tuple<std::string, std::string, int>> concat;  // (T1, T2, dim) copied
};

std::string plan_concat(const Program& p, const analysis::UseDef& ud, int i, int j, const std::string& v,
                        ConcatPlan& plan) {
  const Stmt* s1 = single_stmt(p, i);
  const Stmt* s2 = single_stmt(p, j);
  const Nest& a = p.body[i].nest;
  const Nest& b = p.body[j].nest;
  plan = {};
  plan.first = i, plan.second = j, plan.axis = v;
  if (!iso_stmt(*s1, *s2, plan.names)) return "different operation skeletons";
  const std::string& x1 = s1->lhs->tensor;
  const std::string& x2 = s2->lhs->tensor;
  if (x1 == x2) return "both nests write the same tensor";
  if (a.loops.size() != b.loops.size()) return "different loop nests";
  for (size_t k = 0; k < a.loops.size(); ++k) {
    const Loop &la = a.loops[k], &lb = b.loops[k];
    if (la.var != lb.var || la.kind != lb.kind || la.start != 0 || lb.start != 0) return "different loop nests";
    if (la.var == v) plan.n1 = la.extent, plan.n2 = lb.extent;
    else if (la.extent != lb.extent) return fmt::format("loop {} differs in extent and is not the axis", la.var);
  }
  if (plan.n1 == 0) return fmt::format("no loop {}", v);
  if (plain_dim(*s1->lhs, v) < 0) return fmt::format("{} is not a plain subscript of the result", v);
  std::set<std::string> reductions;
  for (const auto& l : a.loops)
    if (!vars_in(s1->lhs).count(l.var)) reductions.insert(l.var);
  if (!plain_injective_lhs(*s1->lhs, a.loops, reductions)) return "result subscripts are not plain loop variables";
  if (used_as_value(s1->rhs, v)) return fmt::format("{} is used as a value", v);
  auto acc = analysis::accumulation_of(*s1);
  if (written_in(ud, x1, 0, i) || written_in(ud, x1, i + 1, j + 1) || written_in(ud, x2, 0, j))
    return "a result is also written before its nest (its start value would be lost)";
  if (ud.items[j].reads.count(x1) || ud.items[i].reads.count(x2)) return "one nest reads the other's result";
  if (!can_sink(ud, i, j)) return fmt::format("items between {} and {} conflict with the first nest", i, j);
  std::vector<ExprPtr> r1, r2;
  collect_accesses(s1->rhs, r1);
  collect_accesses(s2->rhs, r2);
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (size_t k = 0; k < r1.size(); ++k) {
    const auto& t1 = r1[k]->tensor;
    const auto& t2 = r2[k]->tensor;
    if (t1 == x1 && acc) continue;  // the running value: becomes the concatenated result
    int d = plain_dim(*r1[k], v);
    if (d == -2) return fmt::format("{} is read with {} inside a compound subscript", t1, v);
    if (d == -1) {
      if (t1 != t2) return fmt::format("{} and {} are not indexed by {} but differ", t1, t2, v);
      continue;
    }
    if (seen.insert({t1, t2, d}).second) plan.concat.push_back({t1, t2, d});
  }
  return "";
}

class TensorConcat final : public ConsideringStrategy {
 public:
  std::string_view name() const override { return "tensor_concat_to_fuse_operators"; }
  std::string_view description() const override {
    return "two nests with the same operation skeleton -> one computation over concatenated buffers";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  std::vector<Params> param_space(const Program& p, const Site& s) const override {
    std::vector<Params> out;
    for (const auto& v : axes(p, s.path[0], s.path[1])) out.push_back({{"axis", v}});
    return out;
  }

  std::optional<Candidate> apply(const Program& p, const Site& s, const Params& params) const override {
    auto it = params.find("axis");
    if (it == params.end() || s.path.size() != 2) return std::nullopt;
    auto ud = analysis::use_def(p);
    ConcatPlan plan;
    int i = s.path[0], j = s.path[1];
    if (!single_stmt(p, i) || !single_stmt(p, j)) return std::nullopt;
    if (!plan_concat(p, ud, i, j, std::get<std::string>(it->second), plan).empty()) return std::nullopt;
    auto table = leir::build_tensor_table(p);
    const Stmt& s1 = *single_stmt(p, i);
    const Stmt& s2 = *single_stmt(p, j);
    analysis::NameAllocator alloc(p);
    std::vector<leir::Item> block;
    std::map<std::string, std::string> rename;  // first's tensor -> concatenated buffer
    std::vector<ExprPtr> r1;
    collect_accesses(s1.rhs, r1);
    for (const auto& [t1, t2, d] : plan.concat) {
      auto sh1 = shape_of(table, t1), sh2 = shape_of(table, t2);
      for (size_t k = 0; k < sh1.size(); ++k)
        if (static_cast<int>(k) != d && sh1[k] != sh2[k]) return std::nullopt;
      std::string buf = alloc.fresh_tensor();
      ExprPtr like;
      for (const auto& r : r1) if (r->tensor == t1) like = r;
      block.push_back(leir::Item::of(copy_nest(sh1, d, plan.n1, {{like, buf, 0, like, t1, 0}})));
      block.push_back(leir::Item::of(copy_nest(sh2, d, plan.n2, {{like, buf, plan.n1, like, t2, 0}})));
      rename[t1] = buf;
    }
    // One computation over the concatenated domain.
    std::string result = alloc.fresh_tensor();
    rename[s1.lhs->tensor] = result;
    Nest whole = make_nest(with_extent(p.body[i].nest.loops, plan.axis, plan.n1 + plan.n2),
                           {make_stmt(rename_tensors(s1.lhs, rename), rename_tensors(s1.rhs, rename))});
    block.push_back(leir::Item::of(std::move(whole)));
    // Split the results back over the loops of the result's subscripts.
    int kd = plain_dim(*s1.lhs, plan.axis);
    auto out_loops = [&](const Nest& n, int64_t extent) {
      std::vector<Loop> ls;
      for (const auto& l : n.loops)
        if (vars_in(s1.lhs).count(l.var)) ls.push_back(l.var == plan.axis ? [&] { Loop c = l; c.extent = extent; return c; }() : l);
      return ls;
    };
    auto res = [&](int64_t off) {
      auto idx = s1.lhs->args;
      idx[kd] = plus_const(idx[kd], off);
      return access_like(*s1.lhs, result, idx);
    };
    block.push_back(leir::Item::of(make_nest(out_loops(p.body[i].nest, plan.n1), {make_stmt(s1.lhs, res(0))})));
    block.push_back(leir::Item::of(make_nest(out_loops(p.body[j].nest, plan.n2), {make_stmt(s2.lhs, res(plan.n1))})));
    Program out = p;
    out.body.clear();
    for (int k = 0; k < static_cast<int>(p.body.size()); ++k) {
      if (k == i) continue;
      if (k == j) {
        for (auto& b : block) out.body.push_back(std::move(b));
        continue;
      }
      out.body.push_back(p.body[k]);
    }
    return candidate(p, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  std::vector<Considered> consider(const Program& p) const override {
    std::vector<Considered> out;
    auto ud = analysis::use_def(p);
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      if (!single_stmt(p, i)) continue;
      for (int j = i + 1; j < static_cast<int>(p.body.size()); ++j) {
        if (!single_stmt(p, j)) continue;
        std::map<std::string, std::string> names;
        if (!iso_stmt(*single_stmt(p, i), *single_stmt(p, j), names)) continue;  // not a candidate pair
        Considered c;
        c.site.path = {i, j};
        c.site.description = fmt::format("nests {} and {} ({} and {})", i, j, single_stmt(p, i)->lhs->tensor,
                                         single_stmt(p, j)->lhs->tensor);
        std::string last;
        bool any = false;
        for (const auto& l : p.body[i].nest.loops) {
          ConcatPlan plan;
          auto why = plan_concat(p, ud, i, j, l.var, plan);
          if (why.empty()) any = true;
          else last = fmt::format("axis {}: {}", l.var, why);
        }
        if (!any) c.refusal = last;
        out.push_back(std::move(c));
      }
    }
    return out;
  }

 private:
  static std::vector<std::string> axes(const Program& p, int i, int j) {
    std::vector<std::string> out;
    if (!single_stmt(p, i) || !single_stmt(p, j)) return out;
    auto ud = analysis::use_def(p);
    for (const auto& l : p.body[i].nest.loops) {
      ConcatPlan plan;
      if (plan_concat(p, ud, i, j, l.var, plan).empty()) out.push_back(l.var);
    }
    return out;
  }
};

// ---- 5 tensor_split_to_decouple_operators -----------------------------------------------------

std::string split_refusal(const Program& p, const analysis::UseDef& ud, int i, const std::string& v) {
  const Stmt* s = single_stmt(p, i);
  const Nest& n = p.body[i].nest;
  const Loop* l = loop_of(n, v);
  if (!l || l->extent < 2) return "extent below 2";
  if (l->start != 0) return "loop does not start at 0";
  std::set<std::string> lhs_vars = vars_in(s->lhs);
  std::set<std::string> reductions;
  for (const auto& x : n.loops)
    if (!lhs_vars.count(x.var)) reductions.insert(x.var);
  if (!plain_injective_lhs(*s->lhs, n.loops, reductions)) return "result subscripts are not plain loop variables";
  auto acc = analysis::accumulation_of(*s);
  if (acc && acc->other_self_reads != 0) return "the running value is read more than once";
  if (lhs_vars.count(v)) {
    if (acc && written_in(ud, s->lhs->tensor, 0, i)) return "accumulates into a tensor set earlier";
    return "";
  }
  if (!acc) return fmt::format("{} is not in the result subscripts and the statement is not a reduction", v);
  return "";
}

std::vector<int64_t> split_points(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t t : {n / 2, n / 4, n - n / 4})
    if (t >= 1 && t < n && std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

ExprPtr combine(analysis::AccumOp op, ExprPtr a, ExprPtr b) {
  switch (op) {
    case analysis::AccumOp::Add: return leir::make_binary(BinaryOp::Add, a, b);
    case analysis::AccumOp::Mul: return leir::make_binary(BinaryOp::Mul, a, b);
    case analysis::AccumOp::Max: return leir::make_call(leir::Func::Max, {a, b});
    case analysis::AccumOp::Min: return leir::make_call(leir::Func::Min, {a, b});
  }
  return a;
}

class TensorSplit final : public ConsideringStrategy {
 public:
  std::string_view name() const override { return "tensor_split_to_decouple_operators"; }
  std::string_view description() const override {
    return "split one nest into two halves along a spatial axis (copy, compute, write back) or a reduction axis (partials + combine)";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  std::vector<Params> param_space(const Program& p, const Site& s) const override {
    std::vector<Params> out;
    int i = site_item(s);
    if (!single_stmt(p, i)) return out;
    auto ud = analysis::use_def(p);
    for (const auto& l : p.body[i].nest.loops)
      if (split_refusal(p, ud, i, l.var).empty())
        for (int64_t t : split_points(l.extent)) out.push_back({{"axis", l.var}, {"split", t}});
    return out;
  }

  std::optional<Candidate> apply(const Program& p, const Site& s, const Params& params) const override {
    int i = site_item(s);
    auto ia = params.find("axis");
    auto is = params.find("split");
    if (!single_stmt(p, i) || ia == params.end() || is == params.end()) return std::nullopt;
    const std::string v = std::get<std::string>(ia->second);
    const int64_t t = std::get<int64_t>(is->second);
    auto ud = analysis::use_def(p);
    if (!split_refusal(p, ud, i, v).empty()) return std::nullopt;
    const Nest& n = p.body[i].nest;
    const Stmt& st = *single_stmt(p, i);
    const int64_t ext = loop_of(n, v)->extent;
    if (t < 1 || t >= ext) return std::nullopt;
    analysis::NameAllocator alloc(p);
    std::vector<leir::Item> block;
    Exactness ex = Exactness::Exact;
    const std::string& x = st.lhs->tensor;
    auto acc = analysis::accumulation_of(st);
    if (vars_in(st.lhs).count(v)) {
      // Spatial: copy the slices of inputs indexed plainly by v, compute halves, write back.
      auto table = leir::build_tensor_table(p);
      std::vector<ExprPtr> reads;
      collect_accesses(st.rhs, reads);
      std::map<std::string, std::string> lo, hi;
      std::map<std::string, int> dims;
      for (const auto& r : reads) {
        if (r->tensor == x || lo.count(r->tensor) || dims.count(r->tensor)) continue;
        int d = plain_dim(*r, v);
        bool consistent = d >= 0;
        for (const auto& r2 : reads)
          if (r2->tensor == r->tensor && plain_dim(*r2, v) != d) consistent = false;
        dims[r->tensor] = consistent ? d : -1;
        if (!consistent) continue;
        lo[r->tensor] = alloc.fresh_tensor();
        hi[r->tensor] = alloc.fresh_tensor();
        auto sh = shape_of(table, r->tensor);
        block.push_back(leir::Item::of(copy_nest(sh, d, t, {{r, lo[r->tensor], 0, r, r->tensor, 0}})));
        block.push_back(leir::Item::of(copy_nest(sh, d, ext - t, {{r, hi[r->tensor], 0, r, r->tensor, t}})));
      }
      std::string g = alloc.fresh_tensor(), h = alloc.fresh_tensor();
      lo[x] = g;
      hi[x] = h;
      block.push_back(leir::Item::of(make_nest(with_extent(n.loops, v, t), {shifted_stmt(st, v, 0, lo)})));
      block.push_back(leir::Item::of(make_nest(with_extent(n.loops, v, ext - t), {shifted_stmt(st, v, t, hi)})));
      std::vector<Loop> wl;
      for (const auto& l : n.loops)
        if (vars_in(st.lhs).count(l.var)) wl.push_back(l);
      auto back = [&](const std::string& buf, int64_t off, int64_t count) {
        return make_nest(with_extent(wl, v, count),
                         {make_stmt(shifted(st.lhs, v, off, {}), access_like(*st.lhs, buf, st.lhs->args))});
      };
      block.push_back(leir::Item::of(back(g, 0, t)));
      block.push_back(leir::Item::of(back(h, t, ext - t)));
    } else {
      // Reduction: two partials over [0,t) and [t,n), combined once per result element.
      std::string p1 = alloc.fresh_tensor(), p2 = alloc.fresh_tensor();
      block.push_back(leir::Item::of(make_nest(with_extent(n.loops, v, t), {shifted_stmt(st, v, 0, {{x, p1}})})));
      block.push_back(leir::Item::of(make_nest(with_extent(n.loops, v, ext - t), {shifted_stmt(st, v, t, {{x, p2}})})));
      std::vector<Loop> wl;
      for (const auto& l : n.loops)
        if (vars_in(st.lhs).count(l.var)) wl.push_back(l);
      if (wl.empty()) {
        Loop one;
        one.kind = leir::LoopKind::Bound;
        one.var = "tx";
        wl.push_back(one);
      }
      auto part = [&](const std::string& b) { return access_like(*st.lhs, b, st.lhs->args); };
      block.push_back(leir::Item::of(make_nest(wl, {make_stmt(st.lhs, combine(acc->op, st.lhs, combine(acc->op, part(p1), part(p2))))})));
      if (analysis::reorder_changes_rounding(acc->op)) ex = Exactness::Reassoc;
    }
    Program out = p;
    out.body.erase(out.body.begin() + i);
    out.body.insert(out.body.begin() + i, block.begin(), block.end());
    return candidate(p, s, params, ex, std::move(out));
  }

 protected:
  std::vector<Considered> consider(const Program& p) const override {
    std::vector<Considered> out;
    auto ud = analysis::use_def(p);
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      if (!p.body[i].is_nest()) continue;
      Considered c;
      c.site.path = {i};
      c.site.description = fmt::format("nest {}", i);
      if (!single_stmt(p, i)) {
        c.refusal = "not a single-statement nest";
      } else {
        c.site.description += " (" + single_stmt(p, i)->lhs->tensor + ")";
        std::string why;
        bool any = false;
        for (const auto& l : p.body[i].nest.loops) {
          auto r = split_refusal(p, ud, i, l.var);
          if (r.empty()) any = true;
          else why += (why.empty() ? "" : "; ") + l.var + ": " + r;
        }
        if (!any) c.refusal = why;
      }
      out.push_back(std::move(c));
    }
    return out;
  }
};

RegisterStrategy<TensorConcat> reg_concat(4);
RegisterStrategy<TensorSplit> reg_split(5);

}  // namespace
}  // namespace steptp::strategies
