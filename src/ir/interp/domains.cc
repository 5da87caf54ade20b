#include "ir/interp/domains.h"

#include <cmath>
#include <map>

#include "ir/leir/ir_mutator.h"  // for_each_stmt

namespace steptp::interp {

namespace {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;

// Tensors whose element values `e` uses (subscripts only select elements: they are not followed).
void value_reads(const ExprPtr& e, std::set<std::string>& out) {
  if (e->is_access()) {
    out.insert(e->tensor);
    return;
  }
  for (const auto& a : e->args) value_reads(a, out);
}

bool non_negative_integer_literal(const Expr& e) {
  return e.is_number() && e.value >= 0 && std::floor(e.value) == e.value;
}

// The arguments of `e`'s node that must stay inside a restricted domain.
void restricted_args(const ExprPtr& e, std::set<std::string>& out) {
  if (e->is_access()) return;
  switch (e->kind) {
    case ExprKind::Call:
      if (e->func == Func::Log || e->func == Func::Log1p || e->func == Func::Sqrt || e->func == Func::Rsqrt)
        value_reads(e->args[0], out);
      if (e->func == Func::Pow && !non_negative_integer_literal(*e->args[1])) value_reads(e->args[0], out);
      break;
    case ExprKind::Binary:
      if (e->bop == BinaryOp::Div || e->bop == BinaryOp::FloorDiv || e->bop == BinaryOp::Mod)
        value_reads(e->args[1], out);
      if (e->bop == BinaryOp::Pow && !non_negative_integer_literal(*e->args[1])) value_reads(e->args[0], out);
      break;
    default: break;
  }
  for (const auto& a : e->args) restricted_args(a, out);
}

}  // namespace

std::set<std::string> domain_restricted_inputs(const leir::Program& p) {
  // Per written tensor, the tensors its values are computed from; then a backward closure from
  // the restricted arguments.
  std::map<std::string, std::set<std::string>> sources;
  std::set<std::string> reached;
  leir::for_each_stmt(p.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) {
    value_reads(s.rhs, sources[s.lhs->tensor]);
    restricted_args(s.rhs, reached);
  });
  std::vector<std::string> work(reached.begin(), reached.end());
  while (!work.empty()) {
    std::string t = std::move(work.back());
    work.pop_back();
    auto it = sources.find(t);
    if (it == sources.end()) continue;
    for (const auto& src : it->second)
      if (reached.insert(src).second) work.push_back(src);
  }
  std::set<std::string> out;
  for (const auto& d : p.known)
    if ((d.role == leir::Role::Input || d.role == leir::Role::Param) && leir::is_floating(d.dtype) &&
        reached.count(d.name))
      out.insert(d.name);
  return out;
}

}  // namespace steptp::interp
