// 42 flashattention_wo_tiling: a softmax followed by its P@V product becomes one fused online
// pass (flash attention without tiling).
//
// 42 fuses the P@V product too. Its output O_o itself is the running (normalized) accumulator,
// updated in place after the statistics of the iteration; it carries the previous normalized
// output times the previous sum, so the previous sum needs a per-row buffer T written before S
// moves on:
//   T_s = if_then_else(k-1<0, 0, S_s)
//   O_o = if_then_else(P_s == -inf, 0, O_o * T_s * exp(P_s - M_s)) / S_s + exp(x - M_s) / S_s * V
// O_o is set at every k, so it is read only once set (never at k = 0, where P_s = -inf), and after
// the last k it is the product's value: no accumulator array, no copy nest.
#include <map>
#include <set>

#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/names.h"
#include "transform/schedule_state.h"
#include "transform/softmax/running_values.h"

namespace steptp::strategies::softmax {
namespace {

// ---- 42 flashattention_wo_tiling --------------------------------------------------------------

struct Attention {
  MaxNest m;
  SumNest sum;
  NormNest norm;
  int pv = -1;
  const Nest* pv_nest = nullptr;
  const Stmt* pv_stmt = nullptr;
  ExprPtr v;                                 // the factor multiplied with Z
  std::map<std::string, ExprPtr> var_map;    // P@V loop variables -> fused-nest expressions
  std::vector<Loop> inner;                   // output-column loops (renamed)
  std::string kk;                            // the product's reduction variable
};

std::string match_attention(const Program& p, const analysis::UseDef& ud, int i, Attention& a) {
  if (auto r = match_max(p, ud, i, a.m); !r.empty()) return r;
  if (auto r = match_sum(p, ud, a.m, a.sum); !r.empty()) return r;
  if (auto r = match_norm(p, ud, a.m, a.sum, a.norm); !r.empty()) return r;
  const std::string& z = a.norm.stmt->lhs->tensor;
  if (is_known(p, z)) return fmt::format("the softmax result {} is a known tensor", z);
  auto readers = ud.readers(z);
  if (readers.size() != 1) return fmt::format("{} has {} readers (the P@V product must be the only one)", z, readers.size());
  a.pv = readers[0];
  const Nest* n = flat_nest(p, a.pv);
  if (!n || n->body.size() != 1) return "the reader of the softmax is not a single-statement nest";
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Add || !is_binary(*s.rhs, BinaryOp::Add) || acc->other_self_reads != 0)
    return "the reader of the softmax is not a sum of products O=O+Z*V";
  const ExprPtr& term = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (!is_binary(*term, BinaryOp::Mul)) return "the reader of the softmax is not a sum of products O=O+Z*V";
  ExprPtr zr;
  if (term->args[0]->is_access() && term->args[0]->tensor == z) zr = term->args[0], a.v = term->args[1];
  else if (term->args[1]->is_access() && term->args[1]->tensor == z) zr = term->args[1], a.v = term->args[0];
  else return "the product does not multiply the softmax result directly";
  if (reads_tensor(a.v, z) || reads_tensor(a.v, s.lhs->tensor)) return "the other factor reads Z or O";
  // In the fused pass the statistics are running values: the other factor must not read them.
  if (reads_tensor(a.v, a.m.stmt->lhs->tensor) || reads_tensor(a.v, a.sum.stmt->lhs->tensor))
    return "the other factor reads the softmax statistics";
  // Z_{u..., kk}: u map onto the statistics' subscripts, kk is the product's reduction variable.
  const auto& zl = a.norm.stmt->lhs->args;
  std::set<std::string> mapped;
  for (size_t d = 0; d < zl.size(); ++d) {
    const ExprPtr& r = zr->args[d];
    if (zl[d]->is_number()) {
      if (!r->is_number() || r->value != zl[d]->value) return "the product reads Z at other constant subscripts";
      continue;
    }
    if (!r->is_var() || mapped.count(r->var_name())) return "the product reads Z through non-plain subscripts";
    // Ranges must agree: the product's loop of this variable equals the softmax loop.
    const Loop* pl = nullptr;
    const Loop* ml = nullptr;
    for (const auto& l : n->loops) if (l.var == r->var_name()) pl = &l;
    for (const auto& l : a.m.nest->loops) if (l.var == zl[d]->var_name()) ml = &l;
    if (!pl || !ml || pl->extent != ml->extent || pl->start != ml->start) return "loop ranges of Z's dimensions differ";
    a.var_map[r->var_name()] = zl[d];
    mapped.insert(r->var_name());
  }
  if (!zr->args.back()->is_var()) return "Z's last subscript is not a loop variable";
  const std::string kk = a.kk = zr->args.back()->var_name();
  if (vars_in(s.lhs).count(kk)) return "Z's last dimension is not the product's reduction";
  for (const auto& l : n->loops)
    if (l.var == kk && (l.extent != a.m.nest->loops[a.m.k].extent || l.start != 0))
      return "the product's reduction loop does not cover the softmax axis";
  if (!plain_injective_lhs(*s.lhs, n->loops, {kk})) return "the product's output subscripts are not plain loop variables";
  if (!single_writer(ud, s.lhs->tensor, a.pv)) return fmt::format("{} is written elsewhere too", s.lhs->tensor);
  if (!chain_can_sink(ud, {a.m.item, a.sum.item, a.norm.item}, a.pv))
    return "items between the softmax and the product conflict with it";
  // Output-column loops run inside the fused nest under names fresh in the whole program.
  analysis::NameAllocator names(p);
  for (const auto& l : n->loops) {
    if (l.var == kk) { a.var_map[l.var] = leir::make_var(a.m.nest->loops[a.m.k].var); continue; }
    if (mapped.count(l.var)) continue;
    Loop inner = l;
    inner.var = names.fresh_var();
    a.var_map[l.var] = leir::make_var(inner.var);
    a.inner.push_back(inner);
  }
  a.pv_nest = n;
  a.pv_stmt = &s;
  return "";
}

class FlashAttention final : public Strategy {
 public:
  std::string_view name() const override { return "flashattention_wo_tiling"; }
  std::string_view description() const override {
    return "softmax followed by its P@V product -> one fused online pass (flash attention without tiling)";
  }
  Exactness exactness() const override { return Exactness::Reassoc; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& ud = st.use_def();
    Attention a;
    if (std::string why = match_attention(p, ud, site_item(s), a); !why.empty()) return refuse(s, why);
    auto names = fresh_tensor_names(p, 2);
    const MaxNest& m = a.m;
    OnePass op = make_one_pass(m, a.sum, names[0]);
    // T_s: the previous sum, read by the output's update after S_s has moved on.
    ExprPtr prev_sum = access_like(*op.s, names[1], op.s->args);
    auto pass = one_pass(op, m, {make_stmt(prev_sum, ite(is_first(op.kv), leir::make_int(0), op.s))});
    // O_o in fused-nest variables, updated in place.
    std::vector<ExprPtr> o;
    for (const auto& idx : a.pv_stmt->lhs->args) o.push_back(substitute_vars(idx, a.var_map));
    ExprPtr out = access_like(*a.pv_stmt->lhs, a.pv_stmt->lhs->tensor, o);
    ExprPtr carried_out = carried(op, leir::make_binary(BinaryOp::Mul, out, prev_sum));
    ExprPtr weight = leir::make_binary(BinaryOp::Div, op.term, op.s);
    ExprPtr rhs = leir::make_binary(BinaryOp::Add, leir::make_binary(BinaryOp::Div, carried_out, op.s),
                                    leir::make_binary(BinaryOp::Mul, weight, substitute_vars(a.v, a.var_map)));
    Nest inner = make_nest(a.inner, {make_stmt(out, rhs)});
    Nest fused = make_nest(scan_loops(m), std::move(pass));
    if (a.inner.empty()) fused.body.push_back(inner.body[0]);
    else fused.body.push_back(leir::Item::of(std::move(inner)));
    std::vector<leir::Item> block;
    block.push_back(leir::Item::of(std::move(fused)));
    return candidate(st, s, params, Exactness::Reassoc, splice(p, {m.item, a.sum.item, a.norm.item, a.pv}, std::move(block)));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const auto& ud = st.use_def();
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      if (!is_max_nest(p, i)) continue;
      Attention a;
      Considered c;
      c.refusal = match_attention(p, ud, i, a);
      c.site.path = {i};
      for (int k : {a.sum.item, a.norm.item, a.pv})
        if (k >= 0) c.site.path.push_back(k);
      c.site.description = fmt::format("softmax whose max reduction is item {}", i);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<FlashAttention> flash_attention_registrar(42);

}  // namespace
}  // namespace steptp::strategies::softmax
