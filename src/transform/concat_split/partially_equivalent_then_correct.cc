// 35 partially_equivalent_then_correct (STRATEGIES.md).
//
// Partially equivalent then correct: two identical zero-padded convolutions (pad nest + conv
// nest, same weights) on different inputs X1, X2. The inputs are concatenated along a spatial
// axis, padded once, convolved once; rows of the result whose window stays inside one input
// equal the original outputs and are copied out; the seam rows whose window crosses into the
// other input (or would have read padding) are recomputed from the original padded inputs.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/affine.h"
#include "ir/analysis/names.h"
#include "ir/leir/ir_mutator.h"
#include "transform/concat_split/concat_split_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies::concat_split {
namespace {

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

RegisterStrategy<PartiallyEquivalentThenCorrect> partially_equivalent_then_correct_registrar(35);

}  // namespace
}  // namespace steptp::strategies::concat_split
