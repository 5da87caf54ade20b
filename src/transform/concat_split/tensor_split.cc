// 5 tensor_split_to_decouple_operators (STRATEGIES.md).
//
// Split: one single-statement nest split along a loop v at a point t. A spatial v (in the
// written subscripts): inputs indexed by v are copied into two slices, each half computes into
// its own buffer, copies write them back. A reduction v: two partial reductions over [0,t) and
// [t,n) and a combine X = X (op) (P1 (op) P2) over only the loops of X's subscripts (so each
// element combines once; the public code combined once per remaining reduction iteration).
#include <set>

#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/names.h"
#include "transform/concat_split/concat_split_util.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies::concat_split {
namespace {

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

RegisterStrategy<TensorSplit> tensor_split_registrar(5);

}  // namespace
}  // namespace steptp::strategies::concat_split
