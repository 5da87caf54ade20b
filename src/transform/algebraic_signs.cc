#include "transform/algebraic_signs.h"

#include <algorithm>
#include <cmath>

#include "ir/leir/ir_mutator.h"
#include "transform/algebraic_probes.h"

namespace steptp::strategies::algebraic {

using leir::BinaryOp;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::Program;

bool nonnegative(const ExprPtr& e, const std::set<std::string>& nn) {
  switch (e->kind) {
    case ExprKind::Number: return e->value >= 0;
    case ExprKind::Access: return nn.count(e->tensor) > 0;
    case ExprKind::Binary:
      switch (e->bop) {
        case BinaryOp::Add: case BinaryOp::Mul: case BinaryOp::Div:
          return nonnegative(e->args[0], nn) && nonnegative(e->args[1], nn);
        case BinaryOp::Pow: {
          if (nonnegative(e->args[0], nn)) return true;
          const auto& k = e->args[1];
          return k->is_number() && std::fmod(k->value, 2.0) == 0.0;
        }
        default: return false;
      }
    case ExprKind::Call:
      switch (e->func) {
        case Func::Exp: case Func::Sqrt: case Func::Abs: case Func::Sigmoid: case Func::Rsqrt: return true;
        case Func::Max: return nonnegative(e->args[0], nn) || nonnegative(e->args[1], nn);
        case Func::Min: return nonnegative(e->args[0], nn) && nonnegative(e->args[1], nn);
        case Func::IfThenElse: return nonnegative(e->args[1], nn) && nonnegative(e->args[2], nn);
        case Func::Pow:
          return nonnegative(e->args[0], nn) ||
                 (e->args[1]->is_number() && std::fmod(e->args[1]->value, 2.0) == 0.0);
        default: return false;
      }
    default: return false;
  }
}

namespace {
bool positive(const ExprPtr& e, const std::set<std::string>& nn) {
  switch (e->kind) {
    case ExprKind::Number: return e->value > 0;
    case ExprKind::Binary:
      switch (e->bop) {
        case BinaryOp::Add:
          return (positive(e->args[0], nn) && nonnegative(e->args[1], nn)) ||
                 (nonnegative(e->args[0], nn) && positive(e->args[1], nn));
        case BinaryOp::Mul: case BinaryOp::Div: return positive(e->args[0], nn) && positive(e->args[1], nn);
        case BinaryOp::Pow: return positive(e->args[0], nn);
        default: return false;
      }
    case ExprKind::Call:
      if (e->func == Func::Sqrt || e->func == Func::Abs) return positive(e->args[0], nn);
      if (e->func == Func::Max) return positive(e->args[0], nn) || positive(e->args[1], nn);
      return false;
    default: return false;
  }
}
}  // namespace

namespace {
bool has_leaves(const ExprPtr& e) {
  if (e->kind == ExprKind::Access || e->kind == ExprKind::IndexVar) return true;
  return std::any_of(e->args.begin(), e->args.end(), has_leaves);
}
}  // namespace

bool nonzero(const ExprPtr& e, const std::set<std::string>& nn) {
  if (!has_leaves(e)) {
    double v = constant_value_of(e);
    return std::isfinite(v) && v != 0;
  }
  if (e->kind == ExprKind::Unary) return nonzero(e->args[0], nn);
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Mul || e->bop == BinaryOp::Div))
    return nonzero(e->args[0], nn) && nonzero(e->args[1], nn);
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Pow) return nonzero(e->args[0], nn);
  return positive(e, nn);
}

std::set<std::string> nonnegative_tensors(const Program& p) {
  std::set<std::string> nn;
  std::vector<const leir::Stmt*> writes;
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) {
    writes.push_back(&s);
    if (!p.find_known(s.lhs->tensor) || p.find_known(s.lhs->tensor)->role == leir::Role::Output)
      nn.insert(s.lhs->tensor);
  });
  for (const auto& d : p.known)
    if (d.role == leir::Role::Constant && d.value &&
        std::all_of(d.value->begin(), d.value->end(), [](double x) { return x >= 0; }))
      nn.insert(d.name);
  // Greatest fixpoint: drop every tensor with a write that is not provably >= 0 assuming the
  // current set; by induction over execution order every value of a remaining tensor is >= 0.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto* s : writes) {
      if (!nn.count(s->lhs->tensor)) continue;
      if (!nonnegative(s->rhs, nn)) {
        nn.erase(s->lhs->tensor);
        changed = true;
      }
    }
  }
  return nn;
}

}  // namespace steptp::strategies::algebraic
