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
#include "analysis/footprint.h"
#include "analysis/names.h"
#include "leir/ir_mutator.h"
#include "leir/tensors.h"
#include "strategies/dataflow_util.h"
#include "strategies/schedule_state.h"
#include "strategies/loop_sites.h"

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

// A nest copying a `count`-wide slab along `dim` of the box `box` (inclusive index ranges per
// dimension; `dim`'s own range is replaced by the slab):
// Dst_{i+lo.., j+dst_off, ..} = Src_{i+lo.., j+src_off, ..}; several such statements share one
// nest when their slabs have the same extents.
Nest copy_nest(const analysis::Box& box, int dim, int64_t count,
               const std::vector<std::tuple<ExprPtr, std::string, int64_t, ExprPtr, std::string, int64_t>>& copies) {
  std::vector<Loop> loops;
  auto names = analysis::standalone_vars(box.size());
  for (size_t d = 0; d < box.size(); ++d) {
    Loop l;
    l.kind = d == 0 ? leir::LoopKind::Bound : leir::LoopKind::Serial;
    l.var = d == 0 ? "tx" : names[d - 1];
    l.extent = static_cast<int>(d) == dim ? count : box[d].hi - box[d].lo + 1;
    loops.push_back(l);
  }
  std::vector<Stmt> stmts;
  for (const auto& [dst_like, dst, dst_off, src_like, src, src_off] : copies) {
    std::vector<ExprPtr> di, si;
    for (size_t d = 0; d < box.size(); ++d) {
      auto v = leir::make_var(loops[d].var);
      bool here = static_cast<int>(d) == dim;
      di.push_back(plus_const(v, here ? dst_off : box[d].lo));
      si.push_back(plus_const(v, here ? src_off : box[d].lo));
    }
    stmts.push_back(make_stmt(access_like(*dst_like, dst, di), access_like(*src_like, src, si)));
  }
  return make_nest(loops, stmts);
}

analysis::Box whole(const std::vector<int64_t>& shape) {
  analysis::Box box;
  for (int64_t n : shape) box.push_back({0, n - 1});
  return box;
}

// The box a staging copy of `tensor` covers, for reads `accesses` in a nest over `loops` at
// top-level item `at`: the whole tensor for a program input (every element is defined); for an
// intermediate, the read box (within its shape) when earlier statements wrote all of it, or
// nullopt: a copy could read unset elements (a cache of a slice, a strided write).
std::optional<analysis::Box> copy_box(const Program& p, const leir::TensorTable& table, const std::string& tensor,
                                      const std::vector<ExprPtr>& accesses, const std::vector<Loop>& loops, int at) {
  const auto& info = table.at(tensor);
  analysis::Box all = whole(info.shape);
  if (info.read_only()) return all;
  auto read = analysis::read_footprint(accesses, analysis::loop_ranges(loops));
  analysis::Box box = read ? analysis::intersect(read->box, all) : all;
  if (!analysis::covered(box, analysis::write_footprints(p.body, at, tensor))) return std::nullopt;
  return box;
}

std::vector<ExprPtr> accesses_of(const ExprPtr& e, const std::string& tensor) {
  std::vector<ExprPtr> all, out;
  collect_accesses(e, all);
  for (const auto& a : all)
    if (a->tensor == tensor) out.push_back(a);
  return out;
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
  struct Copied {
    std::string t1, t2;
    int dim;
    ExprPtr read1, read2;           // an access of each (its annotation)
    analysis::Box box1, box2;       // what each copy covers (copy_box)
  };
  std::vector<Copied> concat;
};

std::string plan_concat(const Program& p, const analysis::UseDef& ud, const leir::TensorTable& table, int i, int j,
                        const std::string& v, ConcatPlan& plan) {
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
    if (!seen.insert({t1, t2, d}).second) continue;
    auto reads1 = accesses_of(s1->rhs, t1), reads2 = accesses_of(s2->rhs, t2);
    auto box1 = copy_box(p, table, t1, reads1, a.loops, i);
    auto box2 = copy_box(p, table, t2, reads2, b.loops, j);
    if (!box1 || !box2)
      return fmt::format("{} or {} is an intermediate not written everywhere the nest reads it (a copy could read unset elements)", t1, t2);
    plan.concat.push_back({t1, t2, d, reads1.back(), reads2.back(), std::move(*box1), std::move(*box2)});
  }
  return "";
}

class TensorConcat final : public Strategy {
 public:
  std::string_view name() const override { return "tensor_concat_to_fuse_operators"; }
  std::string_view description() const override {
    return "two nests with the same operation skeleton -> one computation over concatenated buffers";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    std::vector<Params> out;
    for (const auto& v : axes(st, s.path[0], s.path[1])) out.push_back({{"axis", v}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    auto it = params.find("axis");
    if (it == params.end() || s.path.size() != 2) return refuse(s, "no axis parameter or not a pair of nests");
    const auto& ud = st.use_def();
    ConcatPlan plan;
    int i = s.path[0], j = s.path[1];
    if (!single_stmt(p, i) || !single_stmt(p, j)) return refuse(s, "not two single-statement nests");
    const auto& table = st.tensors();
    if (std::string why = plan_concat(p, ud, table, i, j, std::get<std::string>(it->second), plan); !why.empty()) return refuse(s, why);
    const Stmt& s1 = *single_stmt(p, i);
    const Stmt& s2 = *single_stmt(p, j);
    analysis::NameAllocator alloc(p);
    std::vector<leir::Item> block;
    std::map<std::string, std::string> rename;  // first's tensor -> concatenated buffer
    for (const auto& c : plan.concat) {
      auto sh1 = shape_of(table, c.t1), sh2 = shape_of(table, c.t2);
      for (size_t k = 0; k < sh1.size(); ++k)
        if (static_cast<int>(k) != c.dim && sh1[k] != sh2[k])
          return refuse(s, c.t1 + " and " + c.t2 + " differ beside the concatenated dimension");
      std::string buf = alloc.fresh_tensor();
      // The buffer takes t1's annotation (the one computation reads it where it read t1); each
      // source keeps its own (t1 and t2 may differ in scope).
      block.push_back(leir::Item::of(copy_nest(c.box1, c.dim, plan.n1, {{c.read1, buf, 0, c.read1, c.t1, 0}})));
      block.push_back(leir::Item::of(copy_nest(c.box2, c.dim, plan.n2, {{c.read1, buf, plan.n1, c.read2, c.t2, 0}})));
      rename[c.t1] = buf;
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
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
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
          auto why = plan_concat(p, ud, st.tensors(), i, j, l.var, plan);
          if (why.empty()) any = true;
          else last = fmt::format("axis {}: {}", l.var, why);
        }
        if (!any) c.refusal = last;
        out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
      }
    }
    return out;
  }

 private:
  static std::vector<std::string> axes(const ScheduleState& st, int i, int j) {
    const Program& p = st.program();
    std::vector<std::string> out;
    if (!single_stmt(p, i) || !single_stmt(p, j)) return out;
    const auto& ud = st.use_def();
    const auto& table = st.tensors();
    for (const auto& l : p.body[i].nest.loops) {
      ConcatPlan plan;
      if (plan_concat(p, ud, table, i, j, l.var, plan).empty()) out.push_back(l.var);
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
  // Reads of its own tensor other than an accumulation's running value are recurrences
  // (scans X_{a} = f(X_{a-1})) or argmax-style updates: the halves would lose them.
  std::vector<ExprPtr> reads;
  collect_accesses(s->rhs, reads);
  int own = 0;
  for (const auto& r : reads) own += r->tensor == s->lhs->tensor;
  if (own > (acc ? 1 : 0)) return "reads its own tensor beyond an accumulation's running value (recurrence)";
  if (lhs_vars.count(v)) {
    // The halves accumulate into fresh buffers: a start value set earlier would be lost.
    if (acc && written_in(ud, s->lhs->tensor, 0, i)) return "accumulates into a tensor set earlier";
    return "";
  }
  if (!acc) return fmt::format("{} is not in the result subscripts and the statement is not a reduction", v);
  return "";
}

class TensorSplit final : public Strategy {
 public:
  std::string_view name() const override { return "tensor_split_to_decouple_operators"; }
  std::string_view description() const override {
    return "split one nest into two halves along a spatial axis (copy, compute, write back) or a reduction axis (partials + combine)";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    const Program& p = st.program();
    std::vector<Params> out;
    int i = site_item(s);
    if (!single_stmt(p, i)) return out;
    const auto& ud = st.use_def();
    for (const auto& l : p.body[i].nest.loops)
      if (split_refusal(p, ud, i, l.var).empty())
        for (int64_t t : loops::split_points(l.extent)) out.push_back({{"axis", l.var}, {"split", t}});
    return out;
  }

  Applied apply(const ScheduleState& state, const Site& s, const Params& params) const override {
    const Program& p = state.program();
    int i = site_item(s);
    auto ia = params.find("axis");
    auto is = params.find("split");
    if (!single_stmt(p, i)) return refuse(s, "not a single-statement nest");
    if (ia == params.end() || is == params.end()) return refuse(s, "needs axis and split parameters");
    const std::string v = std::get<std::string>(ia->second);
    const int64_t t = std::get<int64_t>(is->second);
    const auto& ud = state.use_def();
    if (std::string why = split_refusal(p, ud, i, v); !why.empty()) return refuse(s, why);
    const Nest& n = p.body[i].nest;
    const Stmt& st = *single_stmt(p, i);
    const int64_t ext = loop_of(n, v)->extent;
    if (t < 1 || t >= ext) return refuse(s, "split point outside 1..extent-1");
    analysis::NameAllocator alloc(p);
    std::vector<leir::Item> block;
    Exactness ex = Exactness::Exact;
    const std::string& x = st.lhs->tensor;
    auto acc = analysis::accumulation_of(st);
    if (vars_in(st.lhs).count(v)) {
      // Spatial: copy the slices of inputs indexed plainly by v, compute halves, write back.
      const auto& table = state.tensors();
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
        // Tensors without a safe copy are read in place.
        auto box = consistent ? copy_box(p, table, r->tensor, accesses_of(st.rhs, r->tensor), n.loops, i) : std::nullopt;
        dims[r->tensor] = box ? d : -1;
        if (!box) continue;
        lo[r->tensor] = alloc.fresh_tensor();
        hi[r->tensor] = alloc.fresh_tensor();
        block.push_back(leir::Item::of(copy_nest(*box, d, t, {{r, lo[r->tensor], 0, r, r->tensor, 0}})));
        block.push_back(leir::Item::of(copy_nest(*box, d, ext - t, {{r, hi[r->tensor], 0, r, r->tensor, t}})));
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
      auto part = [&](const std::string& b) { return access_like(*st.lhs, b, st.lhs->args); };
      block.push_back(leir::Item::of(make_nest(loops_or_scalar(wl), {make_stmt(st.lhs, loops::combine_partials(acc->op, st.lhs, loops::combine_partials(acc->op, part(p1), part(p2))))})));
      if (analysis::reorder_changes_rounding(acc->op)) ex = Exactness::Reassoc;
    }
    Program out = p;
    out.body.erase(out.body.begin() + i);
    out.body.insert(out.body.begin() + i, block.begin(), block.end());
    return candidate(state, s, params, ex, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
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
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};


// ---- 35 partially_equivalent_then_correct -----------------------------------------------------

// H_{w...} = if_then_else(COND, X_{w-o...}, 0) and its only reader D = D + H_{..,u+k,..} * W.
struct PadConv {
  int pad = -1, conv = -1;
  const Nest* pn = nullptr;
  const Nest* cn = nullptr;
  const Stmt* ps = nullptr;
  const Stmt* cs = nullptr;
  ExprPtr h_read;  // the conv's read of H
};

std::string match_pad_conv(const Program& p, const analysis::UseDef& ud, int i, PadConv& pc) {
  const Stmt* s = single_stmt(p, i);
  if (!s) return "not a single-statement nest";
  const ExprPtr& r = s->rhs;
  if (!(r->kind == ExprKind::Call && r->func == leir::Func::IfThenElse && r->args[1]->is_access() &&
        r->args[2]->is_number() && r->args[2]->value == 0))
    return "not a zero padding H=if_then_else(cond, X, 0)";
  const Nest& n = p.body[i].nest;
  if (!plain_injective_lhs(*s->lhs, n.loops)) return "padding subscripts are not plain loop variables";
  const ExprPtr& x = r->args[1];
  if (x->args.size() != s->lhs->args.size()) return "padding changes the rank";
  for (size_t d = 0; d < x->args.size(); ++d) {
    auto f = analysis::to_affine(x->args[d]);
    if (!f || f->coeff.size() != 1 || !s->lhs->args[d]->is_var() || f->coeff_of(s->lhs->args[d]->var_name()) != 1 ||
        f->constant > 0)
      return "padding does not read X_{w-offset} per dimension";
  }
  for (const auto& l : n.loops)
    if (l.start != 0) return "padding loops do not start at 0";
  const std::string& h = s->lhs->tensor;
  if (is_known(p, h)) return "the padded tensor is a known tensor";
  auto readers = ud.readers(h);
  if (readers.size() != 1 || readers[0] <= i) return fmt::format("{} does not have exactly one later reader", h);
  int c = readers[0];
  const Stmt* cs = single_stmt(p, c);
  if (!cs) return "the reader of the padding is not a single-statement nest";
  auto acc = analysis::accumulation_of(*cs);
  if (!acc || acc->op != analysis::AccumOp::Add || acc->other_self_reads != 0 || cs->rhs->kind != ExprKind::Binary ||
      cs->rhs->bop != BinaryOp::Add)
    return "the reader of the padding is not a convolution sum D=D+H*W";
  const ExprPtr& term = cs->rhs->args[0] == acc->self ? cs->rhs->args[1] : cs->rhs->args[0];
  if (term->kind != ExprKind::Binary || term->bop != BinaryOp::Mul) return "the convolution term is not a product";
  ExprPtr hr;
  for (const auto& f : term->args)
    if (f->is_access() && f->tensor == h) hr = f;
  if (!hr) return "the convolution does not multiply the padded tensor directly";
  std::vector<ExprPtr> all;
  collect_accesses(cs->rhs, all);
  int reads_of_h = 0;
  for (const auto& a : all) reads_of_h += a->tensor == h;
  if (reads_of_h != 1) return "the padded tensor is read more than once";
  std::set<std::string> red;
  for (const auto& l : p.body[c].nest.loops)
    if (!vars_in(cs->lhs).count(l.var)) red.insert(l.var);
  if (!plain_injective_lhs(*cs->lhs, p.body[c].nest.loops, red)) return "convolution output subscripts are not plain";
  for (const auto& l : p.body[c].nest.loops)
    if (l.start != 0) return "convolution loops do not start at 0";
  if (!single_writer(ud, cs->lhs->tensor, c) || !single_writer(ud, h, i)) return "padding or convolution result written elsewhere";
  pc = {i, c, &n, &p.body[c].nest, s, cs, hr};
  return "";
}

// For axis q: the padding offset o, the bound comparison `o<=w<o+n` in the condition, the conv
// output variable u and kernel variable k of the read H_{..,u+k,..}.
struct SeamAxis {
  int q = 0;
  int64_t offset = 0, n = 0, h_extent = 0, out_extent = 0, kernel = 0;
  std::string w, u, k;
  const Expr* bound = nullptr;
};

std::string match_axis(const Program& p, const leir::TensorTable& table, const PadConv& pc, int q, SeamAxis& ax) {
  ax = {};
  ax.q = q;
  const Stmt& s = *pc.ps;
  ax.w = s.lhs->args[q]->var_name();
  auto f = analysis::to_affine(s.rhs->args[1]->args[q]);
  ax.offset = -f->constant;
  ax.n = shape_of(table, s.rhs->args[1]->tensor).at(q);
  ax.h_extent = loop_of(*pc.pn, ax.w)->extent;
  // The condition must bound w by exactly [offset, offset + n) in one comparison chain.
  int mentions = 0;
  leir::for_each_expr(s.rhs->args[0], [&](const Expr& e) {
    if (e.kind != ExprKind::Compare) return;
    bool uses = false;
    for (const auto& a : e.args) uses |= vars_in(a).count(ax.w) > 0;
    if (!uses) return;
    ++mentions;
    if (e.args.size() == 3 && e.cmp_ops == std::vector<leir::CompareOp>{leir::CompareOp::Le, leir::CompareOp::Lt} &&
        e.args[0]->is_number() && e.args[1]->is_var() && e.args[1]->var_name() == ax.w && e.args[2]->is_number() &&
        e.args[0]->value == ax.offset && e.args[2]->value == ax.offset + ax.n)
      ax.bound = &e;
  });
  if (mentions != 1 || !ax.bound) return fmt::format("the condition does not bound {} by [{}, {}) in one comparison", ax.w, ax.offset, ax.offset + ax.n);
  if (ax.h_extent < ax.offset + ax.n) return "padded extent smaller than the data";
  // The convolution reads H at u + k along q, u an output dimension, k a reduction.
  auto g = analysis::to_affine(pc.h_read->args[q]);
  if (!g || g->constant != 0 || g->coeff.size() != 2) return "the convolution does not read H at u+k along this axis";
  auto lhs_vars = vars_in(pc.cs->lhs);
  for (const auto& [v, c] : g->coeff) {
    if (c != 1) return "strided convolution along this axis";
    (lhs_vars.count(v) ? ax.u : ax.k) = v;
  }
  if (ax.u.empty() || ax.k.empty()) return "the convolution does not read H at u+k along this axis";
  // u must appear only in the output and this subscript (other reads would go out of range).
  std::vector<ExprPtr> all;
  collect_accesses(pc.cs->rhs, all);
  for (const auto& a : all)
    for (size_t d = 0; d < a->args.size(); ++d)
      if (!(a == pc.h_read && static_cast<int>(d) == q) && !(a->tensor == pc.cs->lhs->tensor) && vars_in(a->args[d]).count(ax.u))
        return fmt::format("{} is used outside the window subscript", ax.u);
  if (used_as_value(pc.cs->rhs, ax.u)) return fmt::format("{} is used as a value", ax.u);
  ax.out_extent = loop_of(*pc.cn, ax.u)->extent;
  ax.kernel = loop_of(*pc.cn, ax.k)->extent;
  return "";
}

struct SeamPlan {
  PadConv a, b;
  std::vector<int> axes;
};

std::string plan_seam(const Program& p, const analysis::UseDef& ud, const leir::TensorTable& table, int i, int j,
                      SeamPlan& plan) {
  if (auto r = match_pad_conv(p, ud, i, plan.a); !r.empty()) return r;
  if (auto r = match_pad_conv(p, ud, j, plan.b); !r.empty()) return r;
  const PadConv &a = plan.a, &b = plan.b;
  if (!same_headers(*a.pn, *b.pn) || !same_headers(*a.cn, *b.cn)) return "the two convolutions have different loops";
  std::map<std::string, std::string> pn, cn;
  if (!iso_stmt(*a.ps, *b.ps, pn) || !iso_stmt(*a.cs, *b.cs, cn)) return "the two convolutions differ";
  for (const auto& [t1, t2] : cn)
    if (t1 != t2 && t1 != a.ps->lhs->tensor && t1 != a.cs->lhs->tensor) return fmt::format("different weights {} and {}", t1, t2);
  const std::string& x1 = a.ps->rhs->args[1]->tensor;
  const std::string& x2 = b.ps->rhs->args[1]->tensor;
  if (x1 == x2) return "both convolutions read the same input";
  if (shape_of(table, x1) != shape_of(table, x2)) return "inputs of different shapes";
  std::vector<int> chain{a.pad, a.conv, b.pad, b.conv};
  std::sort(chain.begin(), chain.end());
  for (int c : chain)
    for (int k = c + 1; k < chain.back(); ++k)
      if (std::find(chain.begin(), chain.end(), k) == chain.end() && conflict(ud.items[c], ud.items[k]))
        return fmt::format("item {} conflicts with the convolutions", k);
  std::string why;
  for (int q = 0; q < static_cast<int>(a.ps->lhs->args.size()); ++q) {
    SeamAxis ax;
    auto r = match_axis(p, table, a, q, ax);
    if (r.empty()) plan.axes.push_back(q);
    else why = fmt::format("dim {}: {}", q, r);
  }
  return plan.axes.empty() ? why : "";
}

class PartiallyEquivalentThenCorrect final : public Strategy {
 public:
  std::string_view name() const override { return "partially_equivalent_then_correct"; }
  std::string_view description() const override {
    return "two identical padded convolutions -> one convolution of concatenated inputs, then recompute the seam";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    const Program& p = st.program();
    std::vector<Params> out;
    SeamPlan plan;
    if (s.path.size() != 4) return out;
    const auto& ud = st.use_def();
    const auto& table = st.tensors();
    if (!plan_seam(p, ud, table, s.path[0], s.path[2], plan).empty()) return out;
    for (int q : plan.axes) out.push_back({{"axis", static_cast<int64_t>(q)}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    auto it = params.find("axis");
    if (s.path.size() != 4 || it == params.end()) return refuse(s, "no axis parameter or not a padded-convolution pair");
    int q = static_cast<int>(std::get<int64_t>(it->second));
    const auto& ud = st.use_def();
    const auto& table = st.tensors();
    SeamPlan plan;
    if (std::string why = plan_seam(p, ud, table, s.path[0], s.path[2], plan); !why.empty()) return refuse(s, why);
    if (std::find(plan.axes.begin(), plan.axes.end(), q) == plan.axes.end()) return refuse(s, "not an axis of the seam");
    const PadConv &a = plan.a, &b = plan.b;
    SeamAxis ax;
    if (std::string why = match_axis(p, table, a, q, ax); !why.empty()) return refuse(s, why);
    analysis::NameAllocator alloc(p);
    std::string cat = alloc.fresh_tensor(), pad = alloc.fresh_tensor(), conv = alloc.fresh_tensor();
    const ExprPtr& x1 = a.ps->rhs->args[1];
    const ExprPtr& x2 = b.ps->rhs->args[1];
    std::vector<leir::Item> block;
    // 1. Concatenate the inputs along q.
    block.push_back(leir::Item::of(copy_nest(whole(shape_of(table, x1->tensor)), q, ax.n,
                                             {{x1, cat, 0, x1, x1->tensor, 0}, {x1, cat, ax.n, x2, x2->tensor, 0}})));
    // 2. Pad the concatenation: same padding, the data range along q twice as long.
    const Expr* bound = ax.bound;
    class Widen : public leir::ExprMutator {
     public:
      Widen(const Expr* b, int64_t n) : b_(b), n_(n) {}
      ExprPtr mutate(const ExprPtr& e) override {
        if (e.get() != b_) return ExprMutator::mutate(e);
        auto copy = std::make_shared<Expr>(*e);
        copy->args[2] = leir::make_int(static_cast<int64_t>(e->args[2]->value) + n_);
        return copy;
      }
     private:
      const Expr* b_;
      int64_t n_;
    } widen(bound, ax.n);
    const std::string& h1 = a.ps->lhs->tensor;
    const std::string& d1 = a.cs->lhs->tensor;
    const std::string& d2 = b.cs->lhs->tensor;
    Stmt padded = make_stmt(rename_tensors(a.ps->lhs, {{h1, pad}}),
                            rename_tensors(widen.mutate(a.ps->rhs), {{x1->tensor, cat}}));
    block.push_back(leir::Item::of(make_nest(with_extent(a.pn->loops, ax.w, ax.h_extent + ax.n), {padded})));
    // 3. One convolution over the concatenation.
    Stmt whole = make_stmt(rename_tensors(a.cs->lhs, {{d1, conv}}), rename_tensors(a.cs->rhs, {{h1, pad}, {d1, conv}}));
    block.push_back(leir::Item::of(make_nest(with_extent(a.cn->loops, ax.u, ax.out_extent + ax.n), {whole})));
    // 4. Rows whose window stays inside one input are already right: copy them out.
    int64_t good1 = std::clamp<int64_t>(ax.offset + ax.n - ax.kernel + 1, 0, ax.out_extent);
    int64_t good2 = std::min(ax.offset, ax.out_extent);  // first correct row of the second output
    std::vector<Loop> out_loops;
    for (const auto& l : a.cn->loops)
      if (vars_in(a.cs->lhs).count(l.var)) out_loops.push_back(l);
    auto from_conv = [&](int64_t off) {
      return shifted(rename_tensors(a.cs->lhs, {{d1, conv}}), ax.u, off, {});
    };
    if (good1 > 0)
      block.push_back(leir::Item::of(make_nest(with_extent(out_loops, ax.u, good1), {make_stmt(a.cs->lhs, from_conv(0))})));
    if (ax.out_extent - good2 > 0)
      block.push_back(leir::Item::of(make_nest(with_extent(out_loops, ax.u, ax.out_extent - good2),
                                               {make_stmt(shifted(b.cs->lhs, ax.u, good2, {}), from_conv(good2 + ax.n))})));
    // 5. Correct the seam: recompute the remaining rows from the original padded inputs.
    if (good1 < ax.out_extent) {
      block.push_back(p.body[a.pad]);
      block.push_back(leir::Item::of(make_nest(with_extent(a.cn->loops, ax.u, ax.out_extent - good1),
                                               {shifted_stmt(*a.cs, ax.u, good1, {})})));
    }
    if (good2 > 0) {
      block.push_back(p.body[b.pad]);
      block.push_back(leir::Item::of(make_nest(with_extent(b.cn->loops, ax.u, good2), {*b.cs})));
    }
    (void)d2;
    std::vector<int> chain{a.pad, a.conv, b.pad, b.conv};
    std::sort(chain.begin(), chain.end());
    Program out = p;
    out.body.clear();
    for (int k = 0; k < static_cast<int>(p.body.size()); ++k) {
      if (k == chain.back())
        for (auto& item : block) out.body.push_back(std::move(item));
      else if (std::find(chain.begin(), chain.end(), k) == chain.end())
        out.body.push_back(p.body[k]);
    }
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    std::vector<PadConv> pcs;
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      PadConv pc;
      if (match_pad_conv(p, ud, i, pc).empty()) pcs.push_back(pc);
    }
    if (pcs.size() < 2) return out;
    for (size_t x = 0; x < pcs.size(); ++x)
      for (size_t y = x + 1; y < pcs.size(); ++y) {
        Considered c;
        c.site.path = {pcs[x].pad, pcs[x].conv, pcs[y].pad, pcs[y].conv};
        c.site.description = fmt::format("convolutions into {} and {}", pcs[x].cs->lhs->tensor, pcs[y].cs->lhs->tensor);
        SeamPlan plan;
        c.refusal = plan_seam(p, ud, st.tensors(), pcs[x].pad, pcs[y].pad, plan);
        out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
      }
    return out;
  }
};

RegisterStrategy<PartiallyEquivalentThenCorrect> reg_seam(35);

RegisterStrategy<TensorConcat> reg_concat(4);
RegisterStrategy<TensorSplit> reg_split(5);

}  // namespace
}  // namespace steptp::strategies
