// 36 normal_loop_max_to_prefix_max: a max reduction becomes a running-max array R_{s,k} over
// its reduction loop plus a copy of the array's last element into the statistic (the array form
// STRATEGIES.md defines; running_values.h).
#include <fmt/format.h>

#include "transform/schedule_state.h"
#include "transform/softmax/running_values.h"

namespace steptp::strategies::softmax {
namespace {

// ---- 36: the running-max array -------------------------------------------------------------

struct Prefix {
  std::string r;       // running max
  ExprPtr kv;          // the reduction variable
  int64_t n = 0;       // its extent
  std::vector<ExprPtr> s;  // statistic subscripts
  const Expr* like = nullptr;
};

ExprPtr at(const Prefix& pf, const std::string& t, ExprPtr k) {
  auto idx = pf.s;
  idx.push_back(std::move(k));
  return access_like(*pf.like, t, idx);
}
ExprPtr at_k(const Prefix& pf, const std::string& t) { return at(pf, t, pf.kv); }
ExprPtr at_prev(const Prefix& pf, const std::string& t) { return at(pf, t, plus_const(pf.kv, -1)); }
ExprPtr at_last(const Prefix& pf, const std::string& t) { return at(pf, t, leir::make_int(pf.n - 1)); }

// R_{s,k} = max(if_then_else(k-1<0, -inf, R_{s,k-1}), x)
Stmt running_max(const Prefix& pf, const ExprPtr& x) {
  return make_stmt(at_k(pf, pf.r), leir::make_call(Func::Max, {ite(is_first(pf.kv), neg_inf(), at_prev(pf, pf.r)), x}));
}

Prefix make_prefix(const Program& p, const MaxNest& m) {
  Prefix pf;
  pf.r = fresh_tensor_names(p, 1)[0];
  const Loop& k = m.nest->loops[m.k];
  pf.kv = leir::make_var(k.var);
  pf.n = k.extent;
  pf.s = m.stmt->lhs->args;
  pf.like = m.stmt->lhs.get();
  return pf;
}

std::vector<Loop> loops_without(const std::vector<Loop>& loops, size_t k) {
  auto out = loops;
  out.erase(out.begin() + static_cast<long>(k));
  return out;
}

// `target_s = prefix_{s,n-1}` copies, one statement per pair, in a nest over the loops but k.
Nest copy_last(const MaxNest& m, const Prefix& pf, const std::vector<std::pair<ExprPtr, std::string>>& pairs) {
  std::vector<Stmt> stmts;
  for (const auto& [target, prefix] : pairs) stmts.push_back(make_stmt(target, at_last(pf, prefix)));
  return make_nest(loops_or_scalar(loops_without(m.nest->loops, m.k)), stmts);
}

// ---- 36 normal_loop_max_to_prefix_max ---------------------------------------------------------

class PrefixMax final : public Strategy {
 public:
  std::string_view name() const override { return "normal_loop_max_to_prefix_max"; }
  std::string_view description() const override {
    return "max reduction -> running-max array over the reduction loop + read of its last element";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& ud = st.use_def();
    MaxNest m;
    if (std::string why = match_max(p, ud, site_item(s), m); !why.empty()) return refuse(s, why);
    Prefix pf = make_prefix(p, m);
    std::vector<leir::Item> block;
    block.push_back(leir::Item::of(make_nest(scan_loops(m), {running_max(pf, m.x)})));
    block.push_back(leir::Item::of(copy_last(m, pf, {{m.stmt->lhs, pf.r}})));
    return candidate(st, s, params, Exactness::Exact, splice(p, {m.item}, std::move(block)));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      MaxNest m;
      Considered c;
      c.site.path = {i};
      c.site.description = fmt::format("item {}", i);
      c.refusal = match_max(p, ud, i, m);
      if (c.refusal == "not a single-statement nest" || c.refusal == "not a max reduction M=max(M,x)") continue;
      c.site.description = fmt::format("max reduction into {} (item {})", m.stmt ? m.stmt->lhs->tensor : flat_nest(p, i)->body[0].stmt.lhs->tensor, i);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<PrefixMax> prefix_max_registrar(36);

}  // namespace
}  // namespace steptp::strategies::softmax
