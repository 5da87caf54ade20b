#include "ir/analysis/accumulation.h"

#include <vector>

#include "ir/leir/ir_mutator.h"

namespace steptp::analysis {

using leir::BinaryOp;
using leir::ExprKind;
using leir::ExprPtr;

namespace {

struct Term {
  ExprPtr e;
  bool positive;
};

void flatten_additive(const ExprPtr& e, bool positive, std::vector<Term>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    flatten_additive(e->args[0], positive, out);
    flatten_additive(e->args[1], e->bop == BinaryOp::Add ? positive : !positive, out);
    return;
  }
  out.push_back({e, positive});
}

void flatten_product(const ExprPtr& e, std::vector<Term>& out) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul) {
    flatten_product(e->args[0], out);
    flatten_product(e->args[1], out);
    return;
  }
  out.push_back({e, true});
}

int count_equal(const ExprPtr& e, const ExprPtr& target) {
  int n = leir::equal(e, target) ? 1 : 0;
  for (const auto& a : e->args) n += count_equal(a, target);
  return n;
}

}  // namespace

std::optional<Accumulation> accumulation_of(const leir::Stmt& s) {
  const ExprPtr& rhs = s.rhs;
  std::optional<Accumulation> acc;
  if (rhs->kind == ExprKind::Binary && (rhs->bop == BinaryOp::Add || rhs->bop == BinaryOp::Sub)) {
    std::vector<Term> terms;
    flatten_additive(rhs, true, terms);
    for (const auto& t : terms)
      if (t.positive && leir::equal(t.e, s.lhs)) {
        acc = Accumulation{AccumOp::Add, t.e, 0};
        break;
      }
  } else if (rhs->kind == ExprKind::Binary && rhs->bop == BinaryOp::Mul) {
    std::vector<Term> terms;
    flatten_product(rhs, terms);
    for (const auto& t : terms)
      if (leir::equal(t.e, s.lhs)) {
        acc = Accumulation{AccumOp::Mul, t.e, 0};
        break;
      }
  } else if (rhs->kind == ExprKind::Call && (rhs->func == leir::Func::Max || rhs->func == leir::Func::Min) &&
             rhs->args.size() == 2) {
    AccumOp op = rhs->func == leir::Func::Max ? AccumOp::Max : AccumOp::Min;
    for (const auto& a : rhs->args)
      if (leir::equal(a, s.lhs)) {
        acc = Accumulation{op, a, 0};
        break;
      }
  }
  if (acc) acc->other_self_reads = count_equal(rhs, s.lhs) - 1;
  return acc;
}

bool is_accumulation(const leir::Stmt& s) { return accumulation_of(s).has_value(); }

bool reorder_changes_rounding(AccumOp op) { return op == AccumOp::Add || op == AccumOp::Mul; }

ExprPtr replace_occurrence(const ExprPtr& rhs, const ExprPtr& self, const ExprPtr& by) {
  struct Replacer : leir::ExprMutator {
    const leir::Expr* target;
    ExprPtr by;
    ExprPtr mutate(const ExprPtr& e) override {
      if (e.get() == target) return by;
      return leir::ExprMutator::mutate(e);
    }
  } r;
  r.target = self.get();
  r.by = by;
  return r.mutate(rhs);
}

}  // namespace steptp::analysis
