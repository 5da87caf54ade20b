#include "transform/softmax/softmax_patterns.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/analysis/accumulation.h"

namespace steptp::strategies::softmax {

bool is_binary(const Expr& e, BinaryOp op) { return e.kind == ExprKind::Binary && e.bop == op; }

bool is_max_nest(const Program& p, int i) {
  const Nest* n = flat_nest(p, i);
  return n && n->body.size() == 1 && n->body[0].stmt.rhs->is_call(Func::Max);
}

std::string match_max(const Program& p, const analysis::UseDef& ud, int i, MaxNest& m) {
  const Nest* n = flat_nest(p, i);
  if (!n || n->body.size() != 1) return "not a single-statement nest";
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Max || !s.rhs->is_call(Func::Max))
    return "not a max reduction M=max(M,x)";
  const std::string& mt = s.lhs->tensor;
  m.x = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (reads_tensor(m.x, mt)) return fmt::format("the reduced value reads {} itself", mt);
  auto lhs_vars = vars_in(s.lhs);
  int reductions = 0;
  for (size_t l = 0; l < n->loops.size(); ++l) {
    if (lhs_vars.count(n->loops[l].var) || n->loops[l].extent == 1) continue;
    ++reductions;
    m.k = l;
  }
  if (reductions != 1) return fmt::format("{} reduction loops (exactly one is handled)", reductions);
  const Loop& k = n->loops[m.k];
  if (k.start != 0) return fmt::format("reduction loop {} does not start at 0", k.var);
  if (!plain_injective_lhs(*s.lhs, n->loops, {k.var}))
    return fmt::format("subscripts of {} are not distinct loop variables / constants", mt);
  if (!single_writer(ud, mt, i)) return fmt::format("{} is written elsewhere too", mt);
  if (contains_gather(s.lhs)) return "gather in the reduction target";
  m.item = i;
  m.nest = n;
  m.stmt = &s;
  return "";
}

namespace {

// x - M_s inside exp(): true when `e` is exp(x - M_s) for the max nest `m`.
bool is_exp_of_centered(const ExprPtr& e, const MaxNest& m) {
  if (!e->is_call(Func::Exp)) return false;
  const ExprPtr& d = e->args[0];
  return is_binary(*d, BinaryOp::Sub) && leir::equal(d->args[0], m.x) && leir::equal(d->args[1], m.stmt->lhs);
}

}  // namespace

std::string match_sum(const Program& p, const analysis::UseDef& ud, const MaxNest& m, SumNest& out) {
  const std::string& mt = m.stmt->lhs->tensor;
  int j = -1;
  for (int k = m.item + 1; k < static_cast<int>(p.body.size()) && j < 0; ++k)
    if (ud.items[k].reads.count(mt)) j = k;
  if (j < 0) return fmt::format("{} is never read", mt);
  const Nest* n = flat_nest(p, j);
  if (!n || n->body.size() != 1 || !same_headers(*n, *m.nest))
    return fmt::format("the first reader of {} (item {}) is not a nest with the same loops", mt, j);
  const Stmt& s = n->body[0].stmt;
  auto acc = analysis::accumulation_of(s);
  if (!acc || acc->op != analysis::AccumOp::Add || !is_binary(*s.rhs, BinaryOp::Add) || acc->other_self_reads != 0)
    return fmt::format("item {} is not a sum S=S+exp(x-M)", j);
  const ExprPtr& term = s.rhs->args[0] == acc->self ? s.rhs->args[1] : s.rhs->args[0];
  if (!is_exp_of_centered(term, m)) return fmt::format("item {} does not sum exp(x - {}) of the same x", j, mt);
  if (s.lhs->args.size() != m.stmt->lhs->args.size()) return "sum and max have different subscripts";
  for (size_t d = 0; d < s.lhs->args.size(); ++d)
    if (!leir::equal(s.lhs->args[d], m.stmt->lhs->args[d])) return "sum and max have different subscripts";
  if (!single_writer(ud, s.lhs->tensor, j)) return fmt::format("{} is written elsewhere too", s.lhs->tensor);
  if (!can_sink(ud, m.item, j)) return fmt::format("items between {} and {} conflict with the max nest", m.item, j);
  out.item = j;
  out.stmt = &s;
  return "";
}

std::string match_norm(const Program& p, const analysis::UseDef& ud, const MaxNest& m, const SumNest& s, NormNest& out) {
  const std::string& st = s.stmt->lhs->tensor;
  int j = -1;
  for (int k = s.item + 1; k < static_cast<int>(p.body.size()) && j < 0; ++k)
    if (ud.items[k].reads.count(st)) j = k;
  if (j < 0) return fmt::format("{} is never read", st);
  const Nest* n = flat_nest(p, j);
  if (!n || n->body.size() != 1 || !same_headers(*n, *m.nest))
    return fmt::format("the first reader of {} (item {}) is not a nest with the same loops", st, j);
  const Stmt& z = n->body[0].stmt;
  if (!is_binary(*z.rhs, BinaryOp::Div) || !is_exp_of_centered(z.rhs->args[0], m) ||
      !leir::equal(z.rhs->args[1], s.stmt->lhs))
    return fmt::format("item {} is not exp(x - M) / S", j);
  // Z_{s,k}: the statistics' subscripts followed by the reduction variable.
  const auto& ms = m.stmt->lhs->args;
  if (z.lhs->args.size() != ms.size() + 1) return "the normalized tensor is not indexed [s..., k]";
  for (size_t d = 0; d < ms.size(); ++d)
    if (!leir::equal(z.lhs->args[d], ms[d])) return "the normalized tensor is not indexed [s..., k]";
  const ExprPtr& last = z.lhs->args.back();
  if (!last->is_var() || last->var_name() != m.nest->loops[m.k].var) return "the normalized tensor is not indexed [s..., k]";
  if (!single_writer(ud, z.lhs->tensor, j)) return fmt::format("{} is written elsewhere too", z.lhs->tensor);
  out.item = j;
  out.stmt = &z;
  return "";
}

bool chain_can_sink(const analysis::UseDef& ud, const std::vector<int>& chain, int to) {
  for (int c : chain)
    for (int k = c + 1; k < to; ++k) {
      if (std::find(chain.begin(), chain.end(), k) != chain.end()) continue;
      if (conflict(ud.items[c], ud.items[k])) return false;
    }
  return true;
}

}  // namespace steptp::strategies::softmax
