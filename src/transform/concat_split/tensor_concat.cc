// 4 tensor_concat_to_fuse_operators (STRATEGIES.md).
//
// Concat: two single-statement nests computing the same operation skeleton (equal up to which
// tensors they read and write) over loops that differ at most in the extent of one axis v. The
// tensors indexed by v are copied into buffers concatenated along v, one nest computes over the
// concatenated domain, and copies split the result back. Tensors not indexed by v must be the
// same tensor in both (shared weights). Every element is computed by the same operations in the
// same order: exact.
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/names.h"
#include "transform/concat_split/concat_split_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies::concat_split {
namespace {

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

RegisterStrategy<TensorConcat> tensor_concat_registrar(4);

}  // namespace
}  // namespace steptp::strategies::concat_split
