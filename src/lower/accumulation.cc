#include "lower/accumulation.h"

#include <algorithm>
#include <limits>

#include "ir/analysis/affine.h"
#include "ir/leir/ir_mutator.h"

namespace steptp::backend {
namespace {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;

struct Term {
  ExprPtr e;
  bool negative = false;
};

void collect_sum(const ExprPtr& e, bool negative, std::vector<Term>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    collect_sum(e->args[0], negative, out);
    collect_sum(e->args[1], e->bop == BinaryOp::Sub ? !negative : negative, out);
    return;
  }
  out.push_back({e, negative});
}

void collect_product(const ExprPtr& e, std::vector<ExprPtr>& out) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul) {
    collect_product(e->args[0], out);
    collect_product(e->args[1], out);
    return;
  }
  out.push_back(e);
}

bool is_top_sum(const ExprPtr& e) {
  return e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub);
}

// Whether the subscripts of `s` write every element of the tensor over `loops`: each is a
// mixed-radix number over loops of its own that start at 0 (`v`, or a split `a*k+b` with
// b < k, `a*32+h*16+f` ...): sorted by coefficient, the coefficients are 1, e1, e1*e2, ... for
// the extents e1, e2, ... of their loops, which multiply to the dimension. Each such subscript
// takes every value of its dimension exactly once, and no loop serves two dimensions (a constant
// subscript covers only a size-1 dimension, as 0).
bool covers_whole(const leir::Stmt& s, const std::vector<const leir::Loop*>& loops,
                  const leir::TensorInfo& info) {
  const auto& idx = s.lhs->args;
  if (idx.size() != info.shape.size()) return false;
  std::set<std::string> used;
  for (size_t d = 0; d < idx.size(); ++d) {
    auto a = analysis::to_affine(idx[d]);
    if (!a || a->constant != 0) return false;
    if (a->coeff.empty()) {
      if (info.shape[d] != 1) return false;
      continue;
    }
    std::vector<std::pair<int64_t, int64_t>> radix;  // coefficient, extent
    for (const auto& [var, c] : a->coeff) {
      if (!used.insert(var).second) return false;
      const leir::Loop* bound = nullptr;
      for (auto it = loops.rbegin(); it != loops.rend() && !bound; ++it)
        if ((*it)->var == var) bound = *it;
      if (!bound || bound->start != 0) return false;
      radix.emplace_back(c, bound->extent);
    }
    std::sort(radix.begin(), radix.end());
    int64_t place = 1;
    for (const auto& [c, extent] : radix) {
      if (c != place) return false;
      place *= extent;
    }
    if (place != info.shape[d]) return false;
  }
  return true;
}

void walk(const std::vector<leir::Item>& body, std::vector<const leir::Loop*>& loops, int item,
          std::vector<StmtSite>& out) {
  for (const auto& it : body) {
    if (it.is_stmt()) {
      out.push_back({&it.stmt, loops, item});
      continue;
    }
    for (const auto& l : it.nest.loops) loops.push_back(&l);
    walk(it.nest.body, loops, item, out);
    loops.resize(loops.size() - it.nest.loops.size());
  }
}

}  // namespace

std::optional<AccumOp> accumulation_op(const leir::Stmt& s) {
  const ExprPtr& x = s.lhs;
  const ExprPtr& r = s.rhs;
  if (is_top_sum(r)) {
    std::vector<Term> terms;
    collect_sum(r, false, terms);
    for (const auto& t : terms)
      if (!t.negative && leir::equal(t.e, x)) return AccumOp::Add;
    return std::nullopt;
  }
  if (r->kind == ExprKind::Binary && r->bop == BinaryOp::Mul) {
    std::vector<ExprPtr> factors;
    collect_product(r, factors);
    for (const auto& f : factors)
      if (leir::equal(f, x)) return AccumOp::Mul;
    return std::nullopt;
  }
  if (r->kind == ExprKind::Call && (r->func == leir::Func::Max || r->func == leir::Func::Min) &&
      r->args.size() == 2 && (leir::equal(r->args[0], x) || leir::equal(r->args[1], x)))
    return r->func == leir::Func::Max ? AccumOp::Max : AccumOp::Min;
  return std::nullopt;
}

double identity_value(AccumOp op) {
  switch (op) {
    case AccumOp::Add: return 0.0;
    case AccumOp::Mul: return 1.0;
    case AccumOp::Max: return -std::numeric_limits<double>::infinity();
    case AccumOp::Min: return std::numeric_limits<double>::infinity();
  }
  return 0.0;
}

ExprPtr accumulation_rest(const leir::Stmt& s, AccumOp op) {
  const ExprPtr& x = s.lhs;
  const ExprPtr& r = s.rhs;
  if (op == AccumOp::Add) {
    std::vector<Term> terms;
    collect_sum(r, false, terms);
    bool dropped = false;
    ExprPtr acc;
    for (const auto& t : terms) {
      if (!dropped && !t.negative && leir::equal(t.e, x)) {
        dropped = true;
        continue;
      }
      if (!acc) acc = t.negative ? leir::make_neg(t.e) : t.e;
      else acc = leir::make_binary(t.negative ? BinaryOp::Sub : BinaryOp::Add, acc, t.e);
    }
    return acc ? acc : leir::make_number(0.0);
  }
  if (op == AccumOp::Mul) {
    std::vector<ExprPtr> factors;
    collect_product(r, factors);
    bool dropped = false;
    ExprPtr acc;
    for (const auto& f : factors) {
      if (!dropped && leir::equal(f, x)) {
        dropped = true;
        continue;
      }
      acc = acc ? leir::make_binary(BinaryOp::Mul, acc, f) : f;
    }
    return acc ? acc : leir::make_number(1.0);
  }
  return leir::equal(r->args[0], x) ? r->args[1] : r->args[0];
}

bool mentions_var(const ExprPtr& e, const std::string& var) {
  bool found = false;
  leir::for_each_expr(e, [&](const Expr& n) {
    if (n.is_var() && n.var_name() == var) found = true;
  });
  return found;
}

bool reads_tensor(const ExprPtr& e) {
  bool found = false;
  leir::for_each_expr(e, [&](const Expr& n) {
    if (n.is_access()) found = true;
  });
  return found;
}

InitLoops init_loops(const StmtSite& site) {
  InitLoops r;
  const auto& args = site.stmt->lhs->args;
  for (const auto& ix : args) r.gather |= reads_tensor(ix);
  for (const auto* l : site.loops) {
    bool used = r.gather;
    for (const auto& ix : args) used |= mentions_var(ix, l->var);
    if (used) r.loops.push_back(l);
  }
  return r;
}

InitPlan plan_inits(const leir::Program& p, const leir::TensorTable& table) {
  InitPlan plan;
  std::vector<const leir::Loop*> loops;
  for (size_t i = 0; i < p.body.size(); ++i) {
    const auto& it = p.body[i];
    if (it.is_stmt()) {
      plan.stmts.push_back({&it.stmt, {}, static_cast<int>(i)});
      continue;
    }
    for (const auto& l : it.nest.loops) loops.push_back(&l);
    walk(it.nest.body, loops, static_cast<int>(i), plan.stmts);
    loops.clear();
  }
  plan.init_before.assign(p.body.size(), {});

  std::map<std::string, bool> written;  // tensor -> fully covered by earlier items
  size_t k = 0;
  for (size_t item = 0; item < p.body.size(); ++item) {
    size_t end = k;
    while (end < plan.stmts.size() && plan.stmts[end].item == static_cast<int>(item)) ++end;
    std::map<std::string, std::vector<size_t>> accs_by_tensor;
    for (size_t j = k; j < end; ++j) {
      const auto& st = *plan.stmts[j].stmt;
      if (auto op = accumulation_op(st)) {
        plan.accum[&st] = *op;
        accs_by_tensor[st.lhs->tensor].push_back(j);
      }
    }
    for (const auto& [tensor, idxs] : accs_by_tensor) {
      auto w = written.find(tensor);
      if (w != written.end()) {
        if (w->second) {
          for (size_t j : idxs) plan.mode[plan.stmts[j].stmt] = InitMode::Set;
        } else {
          plan.tracked.insert(tensor);
        }
        continue;
      }
      bool same_identity = true;
      for (size_t j : idxs)
        same_identity &= plan.accum[plan.stmts[j].stmt] == plan.accum[plan.stmts[idxs[0]].stmt];
      if (!same_identity) {
        plan.tracked.insert(tensor);
        continue;
      }
      for (size_t j : idxs) {
        plan.mode[plan.stmts[j].stmt] = InitMode::InitPass;
        plan.init_before[item].push_back(plan.stmts[j]);
      }
    }
    for (size_t j = k; j < end; ++j) {
      const auto& st = *plan.stmts[j].stmt;
      bool cover = covers_whole(st, plan.stmts[j].loops, table.at(st.lhs->tensor));
      written[st.lhs->tensor] = written[st.lhs->tensor] || cover;
    }
    k = end;
  }
  if (!plan.tracked.empty()) {
    for (auto& [stmt, mode] : plan.mode)
      if (plan.tracked.count(stmt->lhs->tensor)) mode = InitMode::Tracked;
    for (auto& [stmt, op] : plan.accum)
      if (plan.tracked.count(stmt->lhs->tensor)) plan.mode[stmt] = InitMode::Tracked;
    for (auto& list : plan.init_before)
      std::erase_if(list, [&](const StmtSite& s) { return plan.tracked.count(s.stmt->lhs->tensor) > 0; });
  }
  return plan;
}

}  // namespace steptp::backend
