// reduction_factorization (STRATEGIES.md 17): a reduction loop r of a one-statement nest
// accumulating into X_s becomes two partial reductions over r ∈ [0,k) and r ∈ [k,n) into fresh
// tensors T1_s, T2_s, then one combine X_s = X_s ⊕ (T1_s ⊕ T2_s) over the spatial loops only.
//
// The public engine added the partial sums once per remaining reduction iteration on multi-axis
// reductions. Here the combine nest iterates exactly the loops proven to index distinct elements
// of X (analysis::proven_equal on the lhs against itself), so every partial is added once.
#include <algorithm>
#include <set>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/dependence.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/leir/printer.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using analysis::NestRef;
using leir::ExprPtr;
using leir::Loop;
using leir::Program;

struct Shape {
  analysis::Accumulation acc;
  std::vector<int> spatial;    // loop indices of the nest proven to index distinct elements
  std::vector<int> reduction;  // the others
};

// "" and fills `out` when nest `n` is a single accumulation statement with affine lhs subscripts.
std::string analyze(const NestRef& n, Shape* out) {
  if (n.nest->body.size() != 1 || !n.nest->body[0].is_stmt()) return "nest body is not a single statement";
  const leir::Stmt& s = n.nest->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc) return "statement is not an accumulation";
  if (acc->other_self_reads != 0) return "accumulated element is read again in the update";
  for (const auto& sub : s.lhs->args)
    if (!analysis::to_affine(sub)) return "non-affine subscript on the accumulated tensor";
  std::vector<const Loop*> loops = n.outer;
  std::vector<const Loop*> band;
  for (const auto& l : n.nest->loops) {
    loops.push_back(&l);
    band.push_back(&l);
  }
  analysis::AccessAt a{s.lhs, &loops};
  std::set<const Loop*> assumed(n.outer.begin(), n.outer.end());
  auto eq = analysis::proven_equal(a, a, band, assumed);
  out->acc = *acc;
  out->spatial.clear();
  out->reduction.clear();
  for (int k = 0; k < static_cast<int>(band.size()); ++k)
    (eq.count(band[k]) ? out->spatial : out->reduction).push_back(k);
  for (int k : out->reduction)
    for (const auto& sub : s.lhs->args)
      if (analysis::uses_var(sub, band[k]->var))
        return "accumulated element's subscripts use loop " + band[k]->var + " non-injectively";
  // The update itself must not depend on X elsewhere (it reads only its own element).
  for (const auto& r : analysis::reads_of(s))
    if (r->tensor == s.lhs->tensor && r != acc->self) return "update reads the accumulated tensor elsewhere";
  return {};
}

class ReductionFactorization final : public Strategy {
 public:
  std::string_view name() const override { return "reduction_factorization"; }
  std::string_view description() const override {
    return "split a reduction loop into two partial reductions over sub-ranges plus one combine";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  Survey survey(const ScheduleState& st) const override {
    Survey sv;
    for (const auto& n : st.nests()) {
      Shape sh;
      std::string why = analyze(n, &sh);
      if (!why.empty()) {
        sv.refusals.push_back({"nest " + loops::path_text(n.path), why});
        continue;
      }
      if (sh.reduction.empty()) sv.refusals.push_back({"nest " + loops::path_text(n.path), "no reduction loop"});
      for (int k : sh.reduction) {
        std::string where = loops::loop_site_text(n, k);
        if (n.nest->loops[k].extent < 2) sv.refusals.push_back({where, "extent < 2"});
        else sv.sites.push_back({n.path, {k}, where});
      }
    }
    return sv;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    NestRef n = st.nest_at(s.path);
    std::vector<Params> out;
    for (int64_t k : loops::split_points(n.nest->loops[s.detail.at(0)].extent)) out.push_back({{"split", k}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& site, const Params& params) const override {
    const Program& p = st.program();
    NestRef n = st.nest_at(site.path);
    Shape sh;
    if (std::string why = analyze(n, &sh); !why.empty()) return refuse(site, why);
    int r = site.detail.at(0);
    if (std::find(sh.reduction.begin(), sh.reduction.end(), r) == sh.reduction.end())
      return refuse(site, "not a reduction loop");
    const Loop& rl = n.nest->loops[r];
    int64_t k = std::get<int64_t>(params.at("split"));
    if (k < 1 || k >= rl.extent) return refuse(site, "split point outside 1..extent-1");
    const leir::Stmt& s = n.nest->body[0].stmt;
    analysis::NameAllocator names(p);
    std::string t1 = names.fresh_tensor(), t2 = names.fresh_tensor();
    auto partial = [&](const std::string& t) {
      leir::Stmt ps = s;
      ps.lhs = analysis::renamed(s.lhs, t, leir::Scope::Global);
      ps.rhs = analysis::replace_occurrence(s.rhs, sh.acc.self, ps.lhs);
      return ps;
    };
    leir::Nest first = *n.nest, second = *n.nest;
    first.loops[r].extent = k;
    first.body = {leir::Item::of(partial(t1))};
    second.loops[r].extent = rl.extent - k;
    analysis::Affine shift;
    shift.add_term(rl.var, 1);
    shift.constant = k;
    second.body = analysis::substitute_var({leir::Item::of(partial(t2))}, rl.var, shift);
    leir::Stmt comb;
    comb.lhs = s.lhs;
    comb.rhs = loops::combine_partials(sh.acc.op, s.lhs,
                                loops::combine_partials(sh.acc.op, analysis::renamed(s.lhs, t1, leir::Scope::Global),
                                                 analysis::renamed(s.lhs, t2, leir::Scope::Global)));
    std::vector<leir::Item> items = {leir::Item::of(std::move(first)), leir::Item::of(std::move(second))};
    if (sh.spatial.empty()) {
      items.push_back(leir::Item::of(std::move(comb)));
    } else {
      std::vector<Loop> cl;
      for (int j : sh.spatial) cl.push_back(n.nest->loops[j]);
      items.push_back(leir::Item::of(loops::make_nest(std::move(cl), {leir::Item::of(std::move(comb))})));
    }
    Exactness ex = analysis::reorder_changes_rounding(sh.acc.op) ? Exactness::Reassoc : Exactness::Exact;
    return candidate(st, site, params, ex, loops::with_items(p, site.path, std::move(items)));
  }
};

RegisterStrategy<ReductionFactorization> reduction_factorization_registrar(17);

}  // namespace
}  // namespace steptp::strategies
