#include "ir/leir/ir_mutator.h"

namespace steptp::leir {

ExprPtr ExprMutator::mutate(const ExprPtr& e) {
  switch (e->kind) {
    case ExprKind::Number: return visit_number(e);
    case ExprKind::IndexVar: return visit_var(e);
    case ExprKind::Access: return visit_access(e);
    case ExprKind::Unary: return visit_unary(e);
    case ExprKind::Binary: return visit_binary(e);
    case ExprKind::Compare: return visit_compare(e);
    case ExprKind::Call: return visit_call(e);
  }
  return e;
}

ExprPtr ExprMutator::mutate_children(const ExprPtr& e) {
  std::vector<ExprPtr> args;
  args.reserve(e->args.size());
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(mutate(a));
    changed |= args.back() != a;
  }
  if (!changed) return e;
  auto copy = std::make_shared<Expr>(*e);
  copy->args = std::move(args);
  return copy;
}

void for_each_expr(const ExprPtr& e, const std::function<void(const Expr&)>& fn) {
  fn(*e);
  for (const auto& a : e->args) for_each_expr(a, fn);
}

namespace {
void walk(const std::vector<Item>& body, std::vector<const Loop*>& loops,
          const std::function<void(const Stmt&, const std::vector<const Loop*>&)>& fn) {
  for (const auto& item : body) {
    if (item.is_stmt()) {
      fn(item.stmt, loops);
      continue;
    }
    for (const auto& l : item.nest.loops) loops.push_back(&l);
    walk(item.nest.body, loops, fn);
    loops.resize(loops.size() - item.nest.loops.size());
  }
}
}  // namespace

void for_each_stmt(const std::vector<Item>& body,
                   const std::function<void(const Stmt&, const std::vector<const Loop*>&)>& fn) {
  std::vector<const Loop*> loops;
  walk(body, loops, fn);
}

std::vector<Item> map_exprs(const std::vector<Item>& body, const std::function<ExprPtr(const ExprPtr&)>& fn) {
  std::vector<Item> out;
  out.reserve(body.size());
  for (const auto& item : body) {
    if (item.is_stmt()) {
      Stmt s = item.stmt;
      s.lhs = fn(s.lhs);
      s.rhs = fn(s.rhs);
      out.push_back(Item::of(std::move(s)));
    } else {
      Nest n = item.nest;
      n.body = map_exprs(n.body, fn);
      out.push_back(Item::of(std::move(n)));
    }
  }
  return out;
}

}  // namespace steptp::leir
